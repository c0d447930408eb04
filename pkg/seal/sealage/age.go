// Package sealage registers the "age" recipient type of machineadm's
// sealed secrets: filippo.io/age X25519 recipients ("age1…") and hybrid
// post-quantum ML-KEM-768+X25519 recipients ("age1pq1…"), with their
// identities ("AGE-SECRET-KEY-1…", "AGE-SECRET-KEY-PQ-1…"), for users who
// already hold age keys.
//
// Each stanza's wrapped key is a binary age file (age-encryption.org/v1)
// whose payload is the first 16 bytes of SHA-256(WrapInfo) followed by the
// 32-byte data key; Unwrap checks the prefix, so a stanza made for another
// cluster or machine does not open.
//
// age is not allowed in FIPS 140-3 only mode (GODEBUG=fips140=only):
// X25519 and ChaCha20-Poly1305 are not FIPS-approved. ParseRecipient and
// ParseIdentity then fail with a *seal.FIPSError that says to use hpke.
package sealage

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"

	"github.com/machineadm/machineadm/pkg/seal"
)

// Type is the stanza type of age recipients.
const Type = "age"

// Suites of the age stanza.
const (
	SuiteX25519 = "X25519"
	SuiteHybrid = "MLKEM768-X25519"
)

type recipient struct {
	r     age.Recipient
	s     string
	suite string
}

func (r *recipient) Type() string   { return Type }
func (r *recipient) String() string { return r.s }

func (r *recipient) Wrap(dataKey, info []byte) (seal.Stanza, error) {
	var b bytes.Buffer
	w, err := age.Encrypt(&b, r.r)
	if err != nil {
		return seal.Stanza{}, err
	}
	tag := sha256.Sum256(info)
	w.Write(tag[:16])
	w.Write(dataKey)
	if err := w.Close(); err != nil {
		return seal.Stanza{}, err
	}
	return seal.Stanza{Type: Type, KeyID: seal.KeyIDOf(r.s), Suite: r.suite, WrappedKey: base64.StdEncoding.EncodeToString(b.Bytes())}, nil
}

// ParseRecipient parses an age X25519 ("age1…") or hybrid ("age1pq1…")
// recipient.
func ParseRecipient(s string) (seal.Recipient, error) {
	if strings.HasPrefix(s, "age1pq1") {
		r, err := age.ParseHybridRecipient(s)
		if err != nil {
			return nil, err
		}
		return &recipient{r: r, s: s, suite: SuiteHybrid}, nil
	}
	r, err := age.ParseX25519Recipient(s)
	if err != nil {
		return nil, err
	}
	return &recipient{r: r, s: s, suite: SuiteX25519}, nil
}

type identity struct {
	id        age.Identity
	recipient string
	line      string
}

func (i *identity) Type() string  { return Type }
func (i *identity) KeyID() string { return seal.KeyIDOf(i.recipient) }

// Recipient returns the identity's recipient string.
func (i *identity) Recipient() string { return i.recipient }

// String returns the identity line; it is secret.
func (i *identity) String() string { return i.line }

func (i *identity) Unwrap(st seal.Stanza, info []byte) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(st.WrappedKey)
	if err != nil {
		return nil, err
	}
	r, err := age.Decrypt(bytes.NewReader(raw), i.id)
	if err != nil {
		return nil, err
	}
	p, err := io.ReadAll(io.LimitReader(r, 64))
	if err != nil {
		return nil, err
	}
	tag := sha256.Sum256(info)
	if len(p) != 16+32 || subtle.ConstantTimeCompare(p[:16], tag[:16]) != 1 {
		return nil, errors.New("the wrapped key was made for another cluster or machine")
	}
	return p[16:], nil
}

// ParseIdentity parses an age X25519 ("AGE-SECRET-KEY-1…") or hybrid
// ("AGE-SECRET-KEY-PQ-1…") identity. Errors never include the line.
func ParseIdentity(line string) (seal.Identity, error) {
	if strings.HasPrefix(line, "AGE-SECRET-KEY-PQ-1") {
		id, err := age.ParseHybridIdentity(line)
		if err != nil {
			return nil, errors.New("invalid hybrid identity")
		}
		return &identity{id: id, recipient: id.Recipient().String(), line: line}, nil
	}
	id, err := age.ParseX25519Identity(line)
	if err != nil {
		return nil, errors.New("invalid X25519 identity")
	}
	return &identity{id: id, recipient: id.Recipient().String(), line: line}, nil
}

// Generate creates a new age identity: hybrid (ML-KEM-768+X25519) when
// hybrid is true, else X25519. It returns the identity line (secret) and
// the recipient string.
func Generate(hybrid bool) (identityLine, recipient string, err error) {
	if err := seal.CheckFIPS(Type); err != nil {
		return "", "", err
	}
	if hybrid {
		id, err := age.GenerateHybridIdentity()
		if err != nil {
			return "", "", err
		}
		return id.String(), id.Recipient().String(), nil
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", "", fmt.Errorf("generating an age identity: %w", err)
	}
	return id.String(), id.Recipient().String(), nil
}

func init() {
	seal.Register(seal.RecipientType{
		Name:              Type,
		RecipientPrefixes: []string{"age1"},
		ParseRecipient:    ParseRecipient,
		IdentityPrefixes:  []string{"AGE-SECRET-KEY-"},
		ParseIdentity:     ParseIdentity,
		FIPS:              false,
		FIPSNote:          "age uses X25519 and ChaCha20-Poly1305, which are not FIPS-approved; use an hpke recipient (machineadm keygen --type hpke)",
	})
}
