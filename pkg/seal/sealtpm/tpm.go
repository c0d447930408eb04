// Package sealtpm registers the "tpm2" recipient type of machineadm's
// sealed secrets: the data key is wrapped to an ECC P-256 key that lives
// in the machine's TPM 2.0 and never leaves it, through
// github.com/google/go-tpm.
//
// Enrollment (`machineadm keygen --type tpm2`, on the machine or at image
// build time on its TPM) creates, under the TCG reference ECC P-256
// storage root key of the owner hierarchy (tpm2.ECCSRKTemplate, recreated
// identically from the TPM's seed on every use), a non-exportable
// (fixedTPM, fixedParent) ECDH key. Its public point is the recipient
// string, "tpm2:<base64url of the uncompressed SEC 1 point>", recorded by
// whoever seals; its TPM-wrapped private blob, useless without that very
// TPM, is the identity line
// "MACHINEADM-TPM2-KEY:<base64url TPM2B_PUBLIC>:<base64url TPM2B_PRIVATE>".
//
// Sealing is software only: single-shot HPKE (RFC 9180) with
// DHKEM(P-256)+HKDF-SHA256+AES-256-GCM to the recorded public point.
// Opening loads the key into the TPM and computes the Diffie-Hellman share
// with TPM2_ECDH_ZGen, so only that TPM can unwrap the data key.
package sealtpm

import (
	"crypto/ecdh"
	"crypto/hpke"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-tpm/tpm2"
	"github.com/google/go-tpm/tpm2/transport"

	"github.com/machineadm/machineadm/pkg/seal"
)

// Type is the stanza type of TPM recipients.
const Type = "tpm2"

// Suite is the HPKE suite of tpm2 stanzas.
const Suite = "DHKEM(P-256)+HKDF-SHA256+AES-256-GCM"

const (
	recipientPrefix = "tpm2:"
	identityPrefix  = "MACHINEADM-TPM2-KEY:"
)

// OpenTPM opens the TPM: on Linux the first of DefaultDevices that
// opens, on Windows the TPM Base Services. Tests point it at a software
// TPM (swtpm) socket.
var OpenTPM = openDefault

var (
	b64url = base64.RawURLEncoding
	kem    = hpke.DHKEM(ecdh.P256())
)

type recipient struct {
	pub hpke.PublicKey
	s   string
}

func (r *recipient) Type() string   { return Type }
func (r *recipient) String() string { return r.s }

func (r *recipient) Wrap(dataKey, info []byte) (seal.Stanza, error) {
	ct, err := hpke.Seal(r.pub, hpke.HKDFSHA256(), hpke.AES256GCM(), info, dataKey)
	if err != nil {
		return seal.Stanza{}, err
	}
	return seal.Stanza{Type: Type, KeyID: seal.KeyIDOf(r.s), Suite: Suite, WrappedKey: base64.StdEncoding.EncodeToString(ct)}, nil
}

// ParseRecipient parses "tpm2:<base64url uncompressed P-256 point>".
func ParseRecipient(s string) (seal.Recipient, error) {
	raw, err := b64url.Strict().DecodeString(strings.TrimPrefix(s, recipientPrefix))
	if err != nil {
		return nil, fmt.Errorf("public key is not unpadded base64url: %v", err)
	}
	pub, err := kem.NewPublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid P-256 public key: %v", err)
	}
	return &recipient{pub: pub, s: s}, nil
}

// Identity is a TPM-held key: its public and TPM-wrapped private blobs.
type Identity struct {
	public    tpm2.TPM2BPublic
	private   tpm2.TPM2BPrivate
	point     *ecdh.PublicKey
	recipient string
}

// Type returns "tpm2".
func (id *Identity) Type() string { return Type }

// KeyID returns the key ID of the identity's recipient.
func (id *Identity) KeyID() string { return seal.KeyIDOf(id.recipient) }

// Recipient returns the recipient string.
func (id *Identity) Recipient() string { return id.recipient }

// String returns the identity line. The private blob is encrypted by the
// TPM's storage key; the file is still kept 0600.
func (id *Identity) String() string {
	return identityPrefix + b64url.EncodeToString(tpm2.Marshal(id.public)) + ":" + b64url.EncodeToString(tpm2.Marshal(id.private))
}

// Unwrap opens a tpm2 stanza: it loads the key into the TPM and lets the
// TPM compute the HPKE Diffie-Hellman share.
func (id *Identity) Unwrap(st seal.Stanza, info []byte) ([]byte, error) {
	if st.Suite != Suite {
		return nil, fmt.Errorf("stanza suite %q, want %q", st.Suite, Suite)
	}
	ct, err := base64.StdEncoding.DecodeString(st.WrappedKey)
	if err != nil {
		return nil, err
	}
	t, err := OpenTPM()
	if err != nil {
		return nil, err
	}
	defer t.Close()
	kx := &tpmKey{tpm: t, id: id}
	defer kx.flush()
	priv, err := hpke.NewDHKEMPrivateKey(kx)
	if err != nil {
		return nil, err
	}
	return hpke.Open(priv, hpke.HKDFSHA256(), hpke.AES256GCM(), info, ct)
}

// ParseIdentity parses an identity line. Errors never include it.
func ParseIdentity(line string) (seal.Identity, error) {
	return parseIdentity(line)
}

func parseIdentity(line string) (*Identity, error) {
	pubS, privS, ok := strings.Cut(strings.TrimPrefix(line, identityPrefix), ":")
	if !ok {
		return nil, errors.New("want MACHINEADM-TPM2-KEY:<public>:<private>")
	}
	pubB, err1 := b64url.Strict().DecodeString(pubS)
	privB, err2 := b64url.Strict().DecodeString(privS)
	if err1 != nil || err2 != nil {
		return nil, errors.New("blobs are not unpadded base64url")
	}
	pub, err := tpm2.Unmarshal[tpm2.TPM2BPublic](pubB)
	if err != nil {
		return nil, fmt.Errorf("public blob: %v", err)
	}
	priv, err := tpm2.Unmarshal[tpm2.TPM2BPrivate](privB)
	if err != nil {
		return nil, fmt.Errorf("private blob: %v", err)
	}
	point, err := pointOf(*pub)
	if err != nil {
		return nil, err
	}
	return &Identity{public: *pub, private: *priv, point: point, recipient: recipientPrefix + b64url.EncodeToString(point.Bytes())}, nil
}

// pointOf extracts the P-256 public point of a TPM public area.
func pointOf(pub tpm2.TPM2BPublic) (*ecdh.PublicKey, error) {
	p, err := pub.Contents()
	if err != nil {
		return nil, fmt.Errorf("public area: %v", err)
	}
	if p.Type != tpm2.TPMAlgECC {
		return nil, errors.New("not an ECC key")
	}
	u, err := p.Unique.ECC()
	if err != nil {
		return nil, err
	}
	return ecdh.P256().NewPublicKey(uncompressed(u.X.Buffer, u.Y.Buffer))
}

func uncompressed(x, y []byte) []byte {
	b := make([]byte, 65)
	b[0] = 4
	copy(b[1+32-len(x):33], x)
	copy(b[33+32-len(y):], y)
	return b
}

// srk creates the owner hierarchy's TCG reference ECC storage root key.
func srk(t transport.TPM) (*tpm2.CreatePrimaryResponse, error) {
	rsp, err := tpm2.CreatePrimary{
		PrimaryHandle: tpm2.TPMRHOwner,
		InPublic:      tpm2.New2B(tpm2.ECCSRKTemplate),
	}.Execute(t)
	if err != nil {
		return nil, fmt.Errorf("TPM2_CreatePrimary (storage root key): %w", err)
	}
	return rsp, nil
}

// Generate enrolls a new key in the TPM OpenTPM opens and returns its
// identity (write it with seal.WriteIdentityFile) and recipient string.
func Generate() (*Identity, error) {
	t, err := OpenTPM()
	if err != nil {
		return nil, err
	}
	defer t.Close()
	parent, err := srk(t)
	if err != nil {
		return nil, err
	}
	defer tpm2.FlushContext{FlushHandle: parent.ObjectHandle}.Execute(t)
	rsp, err := tpm2.Create{
		ParentHandle: tpm2.NamedHandle{Handle: parent.ObjectHandle, Name: parent.Name},
		InPublic: tpm2.New2B(tpm2.TPMTPublic{
			Type:    tpm2.TPMAlgECC,
			NameAlg: tpm2.TPMAlgSHA256,
			ObjectAttributes: tpm2.TPMAObject{
				FixedTPM: true, FixedParent: true, SensitiveDataOrigin: true,
				UserWithAuth: true, Decrypt: true, NoDA: true,
			},
			Parameters: tpm2.NewTPMUPublicParms(tpm2.TPMAlgECC, &tpm2.TPMSECCParms{
				CurveID: tpm2.TPMECCNistP256,
				Scheme: tpm2.TPMTECCScheme{
					Scheme:  tpm2.TPMAlgECDH,
					Details: tpm2.NewTPMUAsymScheme(tpm2.TPMAlgECDH, &tpm2.TPMSKeySchemeECDH{HashAlg: tpm2.TPMAlgSHA256}),
				},
			}),
		}),
	}.Execute(t)
	if err != nil {
		return nil, fmt.Errorf("TPM2_Create (ECDH key): %w", err)
	}
	point, err := pointOf(rsp.OutPublic)
	if err != nil {
		return nil, err
	}
	return &Identity{public: rsp.OutPublic, private: rsp.OutPrivate, point: point, recipient: recipientPrefix + b64url.EncodeToString(point.Bytes())}, nil
}

// tpmKey is an ecdh.KeyExchanger whose private key is in the TPM.
type tpmKey struct {
	tpm     transport.TPM
	id      *Identity
	handles []tpm2.TPMHandle
}

func (k *tpmKey) PublicKey() *ecdh.PublicKey { return k.id.point }
func (k *tpmKey) Curve() ecdh.Curve          { return ecdh.P256() }

// ECDH returns the X coordinate of the TPM's product of its private key
// and peer (TPM2_ECDH_ZGen), the DH share HPKE's DHKEM expects.
func (k *tpmKey) ECDH(peer *ecdh.PublicKey) ([]byte, error) {
	parent, err := srk(k.tpm)
	if err != nil {
		return nil, err
	}
	k.handles = append(k.handles, parent.ObjectHandle)
	loaded, err := tpm2.Load{
		ParentHandle: tpm2.AuthHandle{Handle: parent.ObjectHandle, Name: parent.Name, Auth: tpm2.PasswordAuth(nil)},
		InPrivate:    k.id.private,
		InPublic:     k.id.public,
	}.Execute(k.tpm)
	if err != nil {
		return nil, fmt.Errorf("TPM2_Load (is this the TPM the key was enrolled in?): %w", err)
	}
	k.handles = append(k.handles, loaded.ObjectHandle)
	b := peer.Bytes() // 0x04 | X | Y
	z, err := tpm2.ECDHZGen{
		KeyHandle: tpm2.AuthHandle{Handle: loaded.ObjectHandle, Name: loaded.Name, Auth: tpm2.PasswordAuth(nil)},
		InPoint: tpm2.New2B(tpm2.TPMSECCPoint{
			X: tpm2.TPM2BECCParameter{Buffer: b[1:33]},
			Y: tpm2.TPM2BECCParameter{Buffer: b[33:]},
		}),
	}.Execute(k.tpm)
	if err != nil {
		return nil, fmt.Errorf("TPM2_ECDH_ZGen: %w", err)
	}
	p, err := z.OutPoint.Contents()
	if err != nil {
		return nil, err
	}
	x := make([]byte, 32)
	copy(x[32-len(p.X.Buffer):], p.X.Buffer)
	return x, nil
}

func (k *tpmKey) flush() {
	for _, h := range k.handles {
		tpm2.FlushContext{FlushHandle: h}.Execute(k.tpm)
	}
}

func init() {
	seal.Register(seal.RecipientType{
		Name:              Type,
		RecipientPrefixes: []string{recipientPrefix},
		ParseRecipient:    ParseRecipient,
		IdentityPrefixes:  []string{identityPrefix},
		ParseIdentity:     ParseIdentity,
		FIPS:              true,
	})
}
