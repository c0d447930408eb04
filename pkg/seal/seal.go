package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
)

// Binding names what an envelope is sealed for: the cluster, the machine
// and the clear spec. All three are bound into every item's additional
// authenticated data; the cluster and machine names also into every
// wrapped key's context (WrapInfo).
type Binding struct {
	// ClusterName is spec.kubernetes.clusterName ("kubernetes" by default).
	ClusterName string
	// MachineName is the node name, or AnyMachine ("*") for a template.
	MachineName string
	// SpecDigest is the digest of the clear spec (SpecDigest) the envelope
	// travels with. Required by Seal.
	SpecDigest string
}

// WrapInfo is the context string a recipient binds into its wrap of the
// data key: "machineadm.io/v1alpha2 SealedSecrets data key", then the
// cluster and machine names, each with a 4-byte big-endian length.
func WrapInfo(b Binding) []byte {
	info := []byte(wrapInfoPrefix)
	info = appendString(info, b.ClusterName)
	return appendString(info, b.MachineName)
}

const wrapInfoPrefix = APIVersion + " " + Kind + " data key"

// ParseWrapInfo returns the Binding that WrapInfo encoded into info, for
// recipients that bind the cluster and machine names as separate fields
// (a KMS encryption context). It fails on anything WrapInfo did not make.
func ParseWrapInfo(info []byte) (Binding, error) {
	rest, ok := bytes.CutPrefix(info, []byte(wrapInfoPrefix))
	var names [2]string
	for i := range names {
		if !ok || len(rest) < 4 {
			return Binding{}, errors.New("seal: not a WrapInfo")
		}
		n := binary.BigEndian.Uint32(rest)
		if uint64(n) > uint64(len(rest)-4) {
			return Binding{}, errors.New("seal: not a WrapInfo")
		}
		names[i], rest = string(rest[4:4+n]), rest[4+n:]
	}
	if len(rest) != 0 {
		return Binding{}, errors.New("seal: not a WrapInfo")
	}
	return Binding{ClusterName: names[0], MachineName: names[1]}, nil
}

// AAD is the additional authenticated data of the item at path in e: the
// canonical header, then the item path. The canonical header is, each
// string with a 4-byte big-endian length: apiVersion, kind, algorithm,
// clusterName, machineName, specDigest (the clear spec's digest); the number of recipients and, for each, type,
// keyID, suite and wrappedKey (as base64 text); the number of items and
// every item path in byte order.
func (e *Envelope) AAD(path string) []byte {
	var b []byte
	for _, s := range []string{e.APIVersion, e.Kind, e.Algorithm, e.ClusterName, e.MachineName, e.SpecDigest} {
		b = appendString(b, s)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(e.Recipients)))
	for _, st := range e.Recipients {
		for _, s := range []string{st.Type, st.KeyID, st.Suite, st.WrappedKey} {
			b = appendString(b, s)
		}
	}
	paths := e.itemPaths()
	b = binary.BigEndian.AppendUint32(b, uint32(len(paths)))
	for _, p := range paths {
		b = appendString(b, p)
	}
	return appendString(b, path)
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// Seal encrypts items (item path → secret bytes) to every recipient: a
// fresh random 256-bit data key, wrapped once per recipient, encrypts each
// item with AES-256-GCM under its own random 12-byte nonce and the AAD of
// its path. Item paths must satisfy ValidItemPath; there must be at least
// one item and one recipient, at most MaxItems and MaxRecipients; b's
// SpecDigest must be a digest as SpecDigest returns it.
func Seal(b Binding, items map[string][]byte, recipients ...Recipient) (*Envelope, error) {
	env := &Envelope{
		APIVersion:  APIVersion,
		Kind:        Kind,
		ClusterName: b.ClusterName,
		MachineName: b.MachineName,
		SpecDigest:  b.SpecDigest,
		Algorithm:   AlgorithmAES256GCM,
		Items:       make(map[string]string, len(items)),
	}
	switch {
	case len(recipients) == 0:
		return nil, errors.New("seal: at least one recipient is required")
	case len(recipients) > MaxRecipients:
		return nil, fmt.Errorf("seal: %d recipients, more than the limit of %d", len(recipients), MaxRecipients)
	case len(items) == 0:
		return nil, errors.New("seal: nothing to seal")
	case len(items) > MaxItems:
		return nil, fmt.Errorf("seal: %d items, more than the limit of %d", len(items), MaxItems)
	}
	for p, v := range items {
		if !ValidItemPath(p) {
			return nil, fmt.Errorf("seal: %q is not a valid item path", p)
		}
		if len(v) > MaxPlaintextBytes {
			return nil, fmt.Errorf("seal: %s: %d bytes, more than the limit of %d", p, len(v), MaxPlaintextBytes)
		}
		env.Items[p] = "" // the AAD lists every path
	}
	dataKey := make([]byte, dataKeySize)
	rand.Read(dataKey) // never fails (crypto/rand)
	defer clear(dataKey)
	info := WrapInfo(b)
	for _, r := range recipients {
		t := lookup(r.Type())
		if t == nil {
			return nil, fmt.Errorf("seal: recipient type %q is not registered", r.Type())
		}
		if err := allowed(t); err != nil {
			return nil, err
		}
		st, err := r.Wrap(dataKey, info)
		if err != nil {
			return nil, fmt.Errorf("seal: wrapping the data key for %s recipient: %w", r.Type(), err)
		}
		env.Recipients = append(env.Recipients, st)
	}
	var pe ParseError
	env.check(&pe) // names, sizes and stanzas the recipients produced
	for _, fe := range pe.Errors {
		if !isItemError(fe.Path) {
			return nil, fmt.Errorf("seal: %s: %s", fe.Path, fe.Detail)
		}
	}
	aead, err := newAEAD(dataKey)
	if err != nil {
		return nil, err
	}
	for p, v := range items {
		ct := aead.Seal(nil, nil, frame(v), env.AAD(p)) // random nonce | ciphertext | tag
		if len(ct) > MaxItemBytes {
			return nil, fmt.Errorf("seal: %s: sealed item of %d bytes, more than the limit of %d", p, len(ct), MaxItemBytes)
		}
		env.Items[p] = base64.StdEncoding.EncodeToString(ct)
	}
	return env, nil
}

func isItemError(path string) bool {
	return len(path) >= 5 && path[:5] == "items"
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	// The random-nonce GCM draws each 12-byte nonce from crypto/rand and
	// prepends it; it is the construction FIPS 140-3 only mode allows.
	return cipher.NewGCMWithRandomNonce(block)
}
