package seal

import (
	"encoding/base64"
	"errors"
	"fmt"
)

// Opened is an opened envelope: the secrets in memory and which recipient
// opened it. Its String never shows a secret.
type Opened struct {
	// Items map each item path to its secret bytes. Callers must not log
	// or write them anywhere but where the spec expects them.
	Items map[string][]byte
	// By is the recipient that opened the envelope, for the report.
	By OpenedBy
}

// OpenedBy says which recipient stanza opened an envelope. It holds no
// secret and goes into the outcome report.
type OpenedBy struct {
	// Type is the recipient type, for example "hpke".
	Type string `json:"type"`
	// KeyID is the stanza's key ID.
	KeyID string `json:"keyID"`
	// Suite is the stanza's suite, if the type has several.
	Suite string `json:"suite,omitempty"`
	// Index is the stanza's position in recipients.
	Index int `json:"index"`
}

func (o *Opened) String() string {
	return fmt.Sprintf("%d sealed item(s) opened by %s recipient %s", len(o.Items), o.By.Type, o.By.KeyID)
}

// Expect is what the machine opening an envelope knows about itself. An
// empty ClusterName or MachineName is not checked (for `machineadm unseal
// --check` on a workstation); the machine passes both. SpecDigest is
// always required.
type Expect struct {
	// SpecDigest is the digest (SpecDigest) of the clear spec the envelope
	// came with. Required: an envelope opens only beside the clear spec it
	// was sealed with.
	SpecDigest string
	// ClusterName is the spec's spec.kubernetes.clusterName.
	ClusterName string
	// MachineName is this machine's node name. An envelope sealed for
	// AnyMachine matches every name.
	MachineName string
}

// Open unwraps the data key with the first identity that opens a stanza
// meant for it (stanzas in order, identities in order) and decrypts every
// item. Every failure is an *OpenError wrapped in an *errclass.Error of
// class VerificationFailed: the binding differs from expect
// (ErrMachineMismatch), the clear spec is not the one sealed with
// (ErrSpecMismatch: its digest differs from specDigest; a specDigest
// edited to match fails as ErrAuthentication, since every item's
// additional data holds it), no identity matches a stanza (ErrNoIdentity), a
// matching stanza does not unwrap (ErrAuthentication and the recipient's
// error) or an item does not decrypt (ErrAuthentication). The exception is
// a key service that did not answer (the recipient's error wraps
// ErrUnavailable) when no other stanza opened: that *OpenError is of class
// PayloadUnavailable, since the envelope may be fine and a later run may
// open it. The envelope is checked as Parse checks it first; a check
// failure is a *ParseError.
func Open(env *Envelope, expect Expect, ids ...Identity) (*Opened, error) {
	var pe ParseError
	env.check(&pe)
	if err := pe.orNil(); err != nil {
		return nil, err
	}
	if expect.SpecDigest == "" {
		return nil, errors.New("seal.Open: Expect.SpecDigest is required")
	}
	if env.SpecDigest != expect.SpecDigest {
		return nil, openErr("specDigest", fmt.Errorf("%w: the clear spec's digest is %s, the envelope was sealed with %s; the spec was changed after sealing",
			ErrSpecMismatch, expect.SpecDigest, env.SpecDigest))
	}
	if expect.ClusterName != "" && env.ClusterName != expect.ClusterName {
		return nil, openErr("clusterName", fmt.Errorf("%w: sealed for cluster %q, this machine's spec names %q", ErrMachineMismatch, env.ClusterName, expect.ClusterName))
	}
	if expect.MachineName != "" && env.MachineName != AnyMachine && env.MachineName != expect.MachineName {
		return nil, openErr("machineName", fmt.Errorf("%w: sealed for machine %q, this machine is %q", ErrMachineMismatch, env.MachineName, expect.MachineName))
	}
	info := WrapInfo(Binding{ClusterName: env.ClusterName, MachineName: env.MachineName})
	var lastErr, unavailable error
	lastPath, unavailablePath := "", ""
	for i, st := range env.Recipients {
		for _, id := range ids {
			if id.Type() != st.Type || (id.KeyID() != "" && id.KeyID() != st.KeyID) {
				continue
			}
			if err := allowed(lookup(st.Type)); err != nil {
				lastErr, lastPath = err, fmt.Sprintf("recipients[%d]", i)
				continue
			}
			key, err := id.Unwrap(st, info)
			if err == nil && len(key) != dataKeySize {
				err = fmt.Errorf("unwrapped a %d-byte key, want %d", len(key), dataKeySize)
			}
			if err != nil && errors.Is(err, ErrUnavailable) {
				unavailable, unavailablePath = err, fmt.Sprintf("recipients[%d]", i)
				continue
			}
			if err != nil {
				lastErr, lastPath = fmt.Errorf("%w: %v", ErrAuthentication, err), fmt.Sprintf("recipients[%d]", i)
				continue
			}
			items, err := env.decrypt(key)
			clear(key)
			if err != nil {
				return nil, err
			}
			return &Opened{Items: items, By: OpenedBy{Type: st.Type, KeyID: st.KeyID, Suite: st.Suite, Index: i}}, nil
		}
	}
	// A key service that did not answer may have held the key: the run
	// is retried, not refused.
	if unavailable != nil {
		return nil, openErr(unavailablePath, unavailable)
	}
	if lastErr == nil {
		return nil, openErr("recipients", fmt.Errorf("%w (the envelope lists %s; the identities are %s)", ErrNoIdentity, stanzaList(env.Recipients), identityList(ids)))
	}
	return nil, openErr(lastPath, lastErr)
}

// decrypt opens every item with the data key.
func (e *Envelope) decrypt(key []byte) (map[string][]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, openErr("", err)
	}
	out := make(map[string][]byte, len(e.Items))
	for _, p := range e.itemPaths() {
		ct, _ := base64.StdEncoding.DecodeString(e.Items[p]) // checked by check
		pt, err := aead.Open(nil, nil, ct, e.AAD(p))
		if err != nil {
			return nil, openErr("items["+p+"]", ErrAuthentication)
		}
		secret, err := unframe(pt)
		clear(pt)
		if err != nil {
			return nil, openErr("items["+p+"]", err)
		}
		out[p] = secret
	}
	return out, nil
}

func stanzaList(sts []Stanza) string {
	s := ""
	for i, st := range sts {
		if i > 0 {
			s += ", "
		}
		s += st.Type + " " + st.KeyID
	}
	return s
}

func identityList(ids []Identity) string {
	if len(ids) == 0 {
		return "none"
	}
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ", "
		}
		k := id.KeyID()
		if k == "" {
			k = "(any key)"
		}
		s += id.Type() + " " + k
	}
	return s
}
