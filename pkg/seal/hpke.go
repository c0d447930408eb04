package seal

import (
	"crypto/ecdh"
	"crypto/hpke"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// HPKE recipient strings and identity lines:
//
//	recipient: hpke:<suite>:<base64url, unpadded, of the KEM public key>
//	identity:  MACHINEADM-HPKE-SECRET-KEY:<suite>:<base64url of the KEM private key>
//
// Suites (RFC 9180; KEM public key serialisation as RFC 9180 §7.1.1 and
// draft-ietf-hpke-pq):
//
//	p384           DHKEM(P-384)+HKDF-SHA384+AES-256-GCM (default; FIPS-approved)
//	mlkem768-p256  MLKEM768-P256+HKDF-SHA256+AES-256-GCM (hybrid post-quantum;
//	               its public key and each stanza add about 1.6 KiB of base64)
const (
	// TypeHPKE is the stanza type of HPKE recipients.
	TypeHPKE = "hpke"
	// HPKESuiteP384 is the default HPKE suite.
	HPKESuiteP384 = "p384"
	// HPKESuiteMLKEM768P256 is the hybrid ML-KEM suite.
	HPKESuiteMLKEM768P256 = "mlkem768-p256"

	hpkeRecipientPrefix = "hpke:"
	hpkeIdentityPrefix  = "MACHINEADM-HPKE-SECRET-KEY:"
)

type hpkeSuite struct {
	name, long string
	kem        hpke.KEM
	kdf        hpke.KDF
	aead       hpke.AEAD
}

var hpkeSuites = map[string]hpkeSuite{
	HPKESuiteP384:         {HPKESuiteP384, "DHKEM(P-384)+HKDF-SHA384+AES-256-GCM", hpke.DHKEM(ecdh.P384()), hpke.HKDFSHA384(), hpke.AES256GCM()},
	HPKESuiteMLKEM768P256: {HPKESuiteMLKEM768P256, "MLKEM768-P256+HKDF-SHA256+AES-256-GCM", hpke.MLKEM768P256(), hpke.HKDFSHA256(), hpke.AES256GCM()},
}

func hpkeSuiteOf(name string) (hpkeSuite, error) {
	s, ok := hpkeSuites[name]
	if !ok {
		return s, fmt.Errorf("unknown suite %q: want %s or %s", name, HPKESuiteP384, HPKESuiteMLKEM768P256)
	}
	return s, nil
}

var b64url = base64.RawURLEncoding

// HPKERecipient is an HPKE public key recipient.
type HPKERecipient struct {
	suite hpkeSuite
	pub   hpke.PublicKey
	str   string
}

// Type returns "hpke".
func (r *HPKERecipient) Type() string { return TypeHPKE }

// String returns "hpke:<suite>:<base64url public key>".
func (r *HPKERecipient) String() string { return r.str }

// Wrap seals dataKey with single-shot HPKE (base mode) under info; the
// stanza's wrapped key is enc | ciphertext.
func (r *HPKERecipient) Wrap(dataKey, info []byte) (Stanza, error) {
	ct, err := hpke.Seal(r.pub, r.suite.kdf, r.suite.aead, info, dataKey)
	if err != nil {
		return Stanza{}, err
	}
	return Stanza{Type: TypeHPKE, KeyID: KeyIDOf(r.str), Suite: r.suite.long, WrappedKey: base64.StdEncoding.EncodeToString(ct)}, nil
}

// ParseHPKERecipient parses "hpke:<suite>:<base64url public key>".
func ParseHPKERecipient(s string) (*HPKERecipient, error) {
	rest, ok := strings.CutPrefix(s, hpkeRecipientPrefix)
	name, key, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return nil, errors.New("want hpke:<suite>:<base64url public key>")
	}
	suite, err := hpkeSuiteOf(name)
	if err != nil {
		return nil, err
	}
	raw, err := b64url.Strict().DecodeString(key)
	if err != nil {
		return nil, fmt.Errorf("public key is not unpadded base64url: %v", err)
	}
	pub, err := suite.kem.NewPublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid %s public key: %v", name, err)
	}
	return &HPKERecipient{suite: suite, pub: pub, str: s}, nil
}

// HPKEIdentity is an HPKE private key.
type HPKEIdentity struct {
	suite     hpkeSuite
	priv      hpke.PrivateKey
	recipient string
}

// Type returns "hpke".
func (id *HPKEIdentity) Type() string { return TypeHPKE }

// KeyID returns the key ID of the identity's recipient.
func (id *HPKEIdentity) KeyID() string { return KeyIDOf(id.recipient) }

// Recipient returns the identity's recipient string.
func (id *HPKEIdentity) Recipient() string { return id.recipient }

// Unwrap opens an hpke stanza made for this key.
func (id *HPKEIdentity) Unwrap(st Stanza, info []byte) ([]byte, error) {
	if st.Suite != id.suite.long {
		return nil, fmt.Errorf("stanza suite %q, identity suite %q", st.Suite, id.suite.long)
	}
	ct, err := base64.StdEncoding.DecodeString(st.WrappedKey)
	if err != nil {
		return nil, err
	}
	return hpke.Open(id.priv, id.suite.kdf, id.suite.aead, info, ct)
}

// String returns the identity line
// "MACHINEADM-HPKE-SECRET-KEY:<suite>:<base64url private key>". It is
// secret: write it only to a 0600 file.
func (id *HPKEIdentity) String() string {
	b, err := id.priv.Bytes()
	if err != nil {
		return ""
	}
	return hpkeIdentityPrefix + id.suite.name + ":" + b64url.EncodeToString(b)
}

func newHPKEIdentity(suite hpkeSuite, priv hpke.PrivateKey) *HPKEIdentity {
	pub := priv.PublicKey().Bytes()
	return &HPKEIdentity{suite: suite, priv: priv, recipient: hpkeRecipientPrefix + suite.name + ":" + b64url.EncodeToString(pub)}
}

// GenerateHPKEIdentity creates a new HPKE private key of suite
// (HPKESuiteP384 or HPKESuiteMLKEM768P256).
func GenerateHPKEIdentity(suite string) (*HPKEIdentity, error) {
	s, err := hpkeSuiteOf(suite)
	if err != nil {
		return nil, err
	}
	priv, err := s.kem.GenerateKey()
	if err != nil {
		return nil, err
	}
	return newHPKEIdentity(s, priv), nil
}

// ParseHPKEIdentity parses an identity line. Errors never include it.
func ParseHPKEIdentity(line string) (*HPKEIdentity, error) {
	rest, ok := strings.CutPrefix(line, hpkeIdentityPrefix)
	name, key, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return nil, errors.New("want MACHINEADM-HPKE-SECRET-KEY:<suite>:<base64url private key>")
	}
	suite, err := hpkeSuiteOf(name)
	if err != nil {
		return nil, err
	}
	raw, err := b64url.Strict().DecodeString(key)
	if err != nil {
		return nil, errors.New("private key is not unpadded base64url")
	}
	priv, err := suite.kem.NewPrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid %s private key", name)
	}
	return newHPKEIdentity(suite, priv), nil
}

func init() {
	Register(RecipientType{
		Name:              TypeHPKE,
		RecipientPrefixes: []string{hpkeRecipientPrefix},
		ParseRecipient:    func(s string) (Recipient, error) { return ParseHPKERecipient(s) },
		IdentityPrefixes:  []string{hpkeIdentityPrefix},
		ParseIdentity:     func(l string) (Identity, error) { return ParseHPKEIdentity(l) },
		FIPS:              true,
	})
}
