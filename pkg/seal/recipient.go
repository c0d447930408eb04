package seal

import (
	"crypto/fips140"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Recipient wraps a data key for one public key (or one KMS key). It is
// made by ParseRecipient from a recipient string, as `machineadm keygen`
// prints it.
type Recipient interface {
	// Type is the stanza type, for example "hpke".
	Type() string
	// String is the recipient string, which ParseRecipient parses back.
	String() string
	// Wrap wraps the 32-byte dataKey into a stanza; info is WrapInfo of
	// the envelope's binding and must be bound into the wrap.
	Wrap(dataKey, info []byte) (Stanza, error)
}

// Identity unwraps the stanzas made for its key: a private key file, a
// TPM-held key, or a cloud identity that may call a KMS.
type Identity interface {
	// Type is the stanza type the identity opens.
	Type() string
	// KeyID is the key ID of the stanzas it opens, or "" for an identity
	// that may try every stanza of its type (a cloud identity calls the KMS
	// named by the stanza's key ID).
	KeyID() string
	// Unwrap returns the 32-byte data key of st; info is WrapInfo of the
	// envelope's binding.
	Unwrap(st Stanza, info []byte) ([]byte, error)
}

// RecipientType is one registered recipient type.
type RecipientType struct {
	// Name is the stanza type ("hpke", "age", ...).
	Name string
	// RecipientPrefixes are the prefixes of the recipient strings
	// ParseRecipient hands to this type ("hpke:", "age1").
	RecipientPrefixes []string
	// ParseRecipient parses a recipient string.
	ParseRecipient func(s string) (Recipient, error)
	// IdentityPrefixes are the prefixes of identity file lines
	// ParseIdentity hands to this type; empty for types without key files.
	IdentityPrefixes []string
	// ParseIdentity parses one identity file line.
	ParseIdentity func(line string) (Identity, error)
	// FIPS says whether the type may be used when FIPS 140-3 mode is
	// enforced (GODEBUG=fips140=only): its cryptography is all approved.
	FIPS bool
	// FIPSNote explains, for a type that is not FIPS-approved, why, and
	// what to use instead.
	FIPSNote string
}

var (
	registryMu sync.RWMutex
	registry   = map[string]*RecipientType{}
)

// Register adds a recipient type. It panics on a duplicate name, as the
// registration is a program's fixed configuration (each type's package
// registers itself in init).
func Register(t RecipientType) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[t.Name]; dup {
		panic("seal: recipient type registered twice: " + t.Name)
	}
	registry[t.Name] = &t
}

func lookup(name string) *RecipientType {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return registry[name]
}

// Types returns the registered recipient type names, sorted.
func Types() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// FIPSError refuses a recipient type that is not FIPS-approved while FIPS
// 140-3 mode is enforced (GODEBUG=fips140=only).
type FIPSError struct {
	// Type is the refused recipient type.
	Type string
	// Note explains why and what to use instead.
	Note string
}

func (e *FIPSError) Error() string {
	return fmt.Sprintf("recipient type %q is not allowed in FIPS 140-3 only mode (GODEBUG=fips140=only): %s", e.Type, e.Note)
}

// allowed checks the FIPS rule for a type.
func allowed(t *RecipientType) error {
	if t.FIPS || !fips140.Enforced() {
		return nil
	}
	return &FIPSError{Type: t.Name, Note: t.FIPSNote}
}

// ParseRecipient parses a recipient string ("hpke:p384:…", "tpm2:…",
// "age1…", "age1pq1…", "aws-kms:arn:…", …) with the registered type whose
// prefix it has. A type that is not FIPS-approved is refused with a
// *FIPSError when FIPS 140-3 mode is enforced.
func ParseRecipient(s string) (Recipient, error) {
	t := matchPrefix(s, func(t *RecipientType) []string { return t.RecipientPrefixes })
	if t == nil {
		// The string is never quoted: what is given where a recipient
		// belongs may be a secret (an identity line, a token) pasted by
		// mistake, and a recipient has no secret to diagnose from.
		if LooksLikeIdentity(s) {
			return nil, errors.New("this is an identity (a secret key), not a recipient string: give the recipient that machineadm keygen printed (the \"# recipient:\" line of the identity file)")
		}
		if typ, _, ok := strings.Cut(s, ":"); ok && typeNameRE().MatchString(typ) {
			// A type name is no secret: say which one this binary lacks.
			return nil, fmt.Errorf("recipient type %q is not in this binary (it has %s; the cloud KMS types need a binary built with their tag, docs/sealed-secrets.md)", typ, strings.Join(Types(), ", "))
		}
		return nil, fmt.Errorf("not a recipient string of a known type: it starts with none of %s", strings.Join(recipientPrefixes(), ", "))
	}
	if err := allowed(t); err != nil {
		return nil, err
	}
	r, err := t.ParseRecipient(s)
	if err != nil {
		return nil, fmt.Errorf("%s recipient: %w", t.Name, err)
	}
	return r, nil
}

// ParseIdentity parses one identity line (a line of an identity file) with
// the registered type whose prefix it has. A type that is not
// FIPS-approved is refused with a *FIPSError when FIPS 140-3 mode is
// enforced. Errors never include the line.
func ParseIdentity(line string) (Identity, error) {
	t := matchPrefix(line, func(t *RecipientType) []string { return t.IdentityPrefixes })
	if t == nil {
		return nil, fmt.Errorf("not an identity of a known type (%s)", strings.Join(Types(), ", "))
	}
	if err := allowed(t); err != nil {
		return nil, err
	}
	id, err := t.ParseIdentity(line)
	if err != nil {
		return nil, fmt.Errorf("%s identity: %w", t.Name, err)
	}
	return id, nil
}

// matchPrefix returns the type with the longest prefix of s.
func matchPrefix(s string, prefixes func(*RecipientType) []string) *RecipientType {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var best *RecipientType
	bestLen := 0
	for _, t := range registry {
		for _, p := range prefixes(t) {
			if strings.HasPrefix(s, p) && len(p) > bestLen {
				best, bestLen = t, len(p)
			}
		}
	}
	return best
}

// LooksLikeIdentity reports whether s (trimmed) starts like an identity
// line of a registered type ("AGE-SECRET-KEY-", "MACHINEADM-HPKE-SECRET-KEY:",
// ...): text that must not be echoed where a path or a recipient string is
// expected, since it may be a secret key given there by mistake.
func LooksLikeIdentity(s string) bool {
	return matchPrefix(strings.TrimSpace(s), func(t *RecipientType) []string { return t.IdentityPrefixes }) != nil
}

// typeNameRE is what a recipient type name looks like ("aws-kms").
var typeNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`) })

// recipientPrefixes returns the registered recipient prefixes, sorted.
func recipientPrefixes() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var ps []string
	for _, t := range registry {
		ps = append(ps, t.RecipientPrefixes...)
	}
	slices.Sort(ps)
	return ps
}

// KeyIDOf returns the key ID of a key-pair recipient: the first 8 bytes of
// the SHA-256 of its recipient string, as 16 lower-case hex characters.
func KeyIDOf(recipient string) string {
	sum := sha256.Sum256([]byte(recipient))
	return hex.EncodeToString(sum[:8])
}

// CheckFIPS returns a *FIPSError when FIPS 140-3 mode is enforced and the
// registered type name is not FIPS-approved, else nil.
func CheckFIPS(name string) error {
	t := lookup(name)
	if t == nil {
		return fmt.Errorf("recipient type %q is not registered", name)
	}
	return allowed(t)
}
