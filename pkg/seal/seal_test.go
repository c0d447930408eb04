package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
)

var testItems = map[string][]byte{
	"spec.join.token":                       []byte("abcdef.0123456789abcdef"),
	"spec.controlPlane.certificateKey":      []byte(strings.Repeat("ab", 32)),
	"spec.controlPlane.pki.dir/etcd/ca.key": []byte("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAoAoGCCqGSM49\n-----END EC PRIVATE KEY-----\n"),
	"spec.host.files[2].content":            bytes.Repeat([]byte("compressible "), 100),
}

// testDigest is the digest of a clear spec the test envelopes are sealed
// with; otherDigest that of an edited one.
var (
	testDigest  = mustDigest("apiVersion: machineadm.io/v1alpha1\nkind: MachineBootstrapConfig\nspec:\n  node: {name: cp1}\n")
	otherDigest = mustDigest("apiVersion: machineadm.io/v1alpha1\nkind: MachineBootstrapConfig\nspec:\n  node: {name: cp2}\n")
)

func mustDigest(doc string) string {
	d, err := SpecDigest([]byte(doc))
	if err != nil {
		panic(err)
	}
	return d
}

var testBinding = Binding{ClusterName: "kubernetes", MachineName: "cp1", SpecDigest: testDigest}

func newHPKE(t testing.TB, suite string) *HPKEIdentity {
	t.Helper()
	id, err := GenerateHPKEIdentity(suite)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func recipientOf(t testing.TB, s string) Recipient {
	t.Helper()
	r, err := ParseRecipient(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// reparse marshals and parses env, as a machine reads it from user data.
func reparse(t testing.TB, env *Envelope) *Envelope {
	t.Helper()
	y, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, err := Parse(y)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, y)
	}
	return out
}

func checkItems(t *testing.T, got map[string][]byte) {
	t.Helper()
	if len(got) != len(testItems) {
		t.Fatalf("got %d items, want %d", len(got), len(testItems))
	}
	for p, want := range testItems {
		if !bytes.Equal(got[p], want) {
			t.Errorf("%s: got %q, want %q", p, got[p], want)
		}
	}
}

func TestRoundTripHPKE(t *testing.T) {
	for _, suite := range []string{HPKESuiteP384, HPKESuiteMLKEM768P256} {
		t.Run(suite, func(t *testing.T) {
			id := newHPKE(t, suite)
			// the identity survives its file form
			id2, err := ParseHPKEIdentity(id.String())
			if err != nil {
				t.Fatal(err)
			}
			env, err := Seal(testBinding, testItems, recipientOf(t, id.Recipient()))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Open(reparse(t, env), Expect{SpecDigest: testDigest, ClusterName: "kubernetes", MachineName: "cp1"}, id2)
			if err != nil {
				t.Fatal(err)
			}
			checkItems(t, got.Items)
			if got.By.Type != TypeHPKE || got.By.KeyID != KeyIDOf(id.Recipient()) || got.By.Index != 0 {
				t.Errorf("opened by %+v", got.By)
			}
			if s := got.String(); strings.Contains(s, "abcdef") {
				t.Errorf("String shows a secret: %s", s)
			}
		})
	}
}

func TestAnyOneRecipientOpens(t *testing.T) {
	a, b := newHPKE(t, HPKESuiteP384), newHPKE(t, HPKESuiteMLKEM768P256)
	env, err := Seal(testBinding, testItems, recipientOf(t, a.Recipient()), recipientOf(t, b.Recipient()))
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []Identity{a, b} {
		got, err := Open(reparse(t, env), Expect{SpecDigest: testDigest}, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.By.Index != i {
			t.Errorf("identity %d opened stanza %d", i, got.By.Index)
		}
		checkItems(t, got.Items)
	}
}

func TestTemplateOpensOnAnyMachine(t *testing.T) {
	id := newHPKE(t, HPKESuiteP384)
	env, err := Seal(Binding{ClusterName: "c", MachineName: AnyMachine, SpecDigest: testDigest}, testItems, recipientOf(t, id.Recipient()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(env, Expect{SpecDigest: testDigest, ClusterName: "c", MachineName: "w7"}, id); err != nil {
		t.Fatal(err)
	}
}

// wantVerificationFailed asserts err is an OpenError of class
// VerificationFailed.
func wantVerificationFailed(t *testing.T, err error, want error) {
	t.Helper()
	if err == nil {
		t.Fatal("opened; want VerificationFailed")
	}
	if c, hint := errclass.Of(err); c != errclass.VerificationFailed || hint == "" {
		t.Errorf("class %q hint %q, want VerificationFailed with a hint: %v", c, hint, err)
	}
	if !IsOpenError(err) {
		t.Errorf("not an OpenError: %v", err)
	}
	if want != nil && !errors.Is(err, want) {
		t.Errorf("error %v, want %v", err, want)
	}
	for _, v := range testItems {
		if strings.Contains(err.Error(), string(v)) {
			t.Errorf("error shows a secret: %v", err)
		}
	}
}

// flip returns b64 with bit 0 of decoded byte i changed (i < 0 counts
// from the end).
func flip(t *testing.T, b64 string, i int) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	if i < 0 {
		i += len(b)
	}
	b[i] ^= 1
	return base64.StdEncoding.EncodeToString(b)
}

func TestTamperGivesVerificationFailed(t *testing.T) {
	a, b := newHPKE(t, HPKESuiteP384), newHPKE(t, HPKESuiteP384)
	expect := Expect{SpecDigest: testDigest, ClusterName: "kubernetes", MachineName: "cp1"}
	fresh := func() *Envelope {
		env, err := Seal(testBinding, testItems, recipientOf(t, a.Recipient()), recipientOf(t, b.Recipient()))
		if err != nil {
			t.Fatal(err)
		}
		return reparse(t, env)
	}
	const item = "spec.join.token"
	cases := []struct {
		name   string
		edit   func(e *Envelope)
		expect Expect
		want   error
	}{
		{"item nonce", func(e *Envelope) { e.Items[item] = flip(t, e.Items[item], 0) }, expect, ErrAuthentication},
		{"item last nonce byte", func(e *Envelope) { e.Items[item] = flip(t, e.Items[item], nonceSize-1) }, expect, ErrAuthentication},
		{"item ciphertext", func(e *Envelope) { e.Items[item] = flip(t, e.Items[item], nonceSize) }, expect, ErrAuthentication},
		{"item tag", func(e *Envelope) { e.Items[item] = flip(t, e.Items[item], -1) }, expect, ErrAuthentication},
		{"wrapped key enc", func(e *Envelope) { e.Recipients[0].WrappedKey = flip(t, e.Recipients[0].WrappedKey, 1) }, expect, ErrAuthentication},
		{"wrapped key ciphertext", func(e *Envelope) { e.Recipients[0].WrappedKey = flip(t, e.Recipients[0].WrappedKey, -20) }, expect, ErrAuthentication},
		{"wrapped key tag", func(e *Envelope) { e.Recipients[0].WrappedKey = flip(t, e.Recipients[0].WrappedKey, -1) }, expect, ErrAuthentication},
		{"other recipient's wrapped key", func(e *Envelope) { e.Recipients[1].WrappedKey = flip(t, e.Recipients[1].WrappedKey, 5) }, expect, ErrAuthentication},
		{"recipient removed", func(e *Envelope) { e.Recipients = e.Recipients[:1] }, expect, ErrAuthentication},
		{"recipient duplicated", func(e *Envelope) { e.Recipients = append(e.Recipients, e.Recipients[1]) }, expect, ErrAuthentication},
		{"recipients swapped", func(e *Envelope) { e.Recipients[0], e.Recipients[1] = e.Recipients[1], e.Recipients[0] }, expect, ErrAuthentication},
		{"other recipient's key ID", func(e *Envelope) { e.Recipients[1].KeyID = "0000000000000000" }, expect, ErrAuthentication},
		{"suite", func(e *Envelope) { e.Recipients[0].Suite = hpkeSuites[HPKESuiteMLKEM768P256].long }, expect, ErrAuthentication},
		{"machine name edited to this machine", func(e *Envelope) { e.MachineName = "cp2" }, Expect{SpecDigest: testDigest, ClusterName: "kubernetes", MachineName: "cp2"}, ErrAuthentication},
		{"machine name edited to a wildcard", func(e *Envelope) { e.MachineName = AnyMachine }, expect, ErrAuthentication},
		{"cluster name edited", func(e *Envelope) { e.ClusterName = "other" }, Expect{SpecDigest: testDigest, MachineName: "cp1"}, ErrAuthentication},
		{"sealed for another machine", func(e *Envelope) {}, Expect{SpecDigest: testDigest, ClusterName: "kubernetes", MachineName: "cp2"}, ErrMachineMismatch},
		{"sealed for another cluster", func(e *Envelope) {}, Expect{SpecDigest: testDigest, ClusterName: "prod", MachineName: "cp1"}, ErrMachineMismatch},
		// The clear spec beside the envelope is bound: another digest (an
		// edited node name, endpoint, file path or mode) does not open, and
		// a specDigest edited to match it fails the items' tags.
		{"clear spec edited", func(e *Envelope) {}, Expect{SpecDigest: otherDigest, ClusterName: "kubernetes", MachineName: "cp1"}, ErrSpecMismatch},
		{"specDigest edited to the edited spec's", func(e *Envelope) { e.SpecDigest = otherDigest }, Expect{SpecDigest: otherDigest, ClusterName: "kubernetes", MachineName: "cp1"}, ErrAuthentication},
		{"item moved to another path", func(e *Envelope) {
			e.Items["spec.join.tokens"] = e.Items[item]
			delete(e.Items, item)
		}, expect, ErrAuthentication},
		{"items swapped", func(e *Envelope) {
			o := "spec.controlPlane.certificateKey"
			e.Items[item], e.Items[o] = e.Items[o], e.Items[item]
		}, expect, ErrAuthentication},
		{"item removed", func(e *Envelope) { delete(e.Items, "spec.host.files[2].content") }, expect, ErrAuthentication},
		{"item added", func(e *Envelope) { e.Items["spec.host.files[3].content"] = e.Items[item] }, expect, ErrAuthentication},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := fresh()
			c.edit(env)
			_, err := Open(reparse(t, env), c.expect, a)
			wantVerificationFailed(t, err, c.want)
		})
	}
	t.Run("every byte of an item", func(t *testing.T) {
		env := fresh()
		raw, _ := base64.StdEncoding.DecodeString(env.Items[item])
		for i := range raw {
			e := fresh()
			e.Items[item] = flip(t, env.Items[item], i)
			e.Recipients = env.Recipients
			for p, v := range env.Items {
				if p != item {
					e.Items[p] = v
				}
			}
			_, err := Open(e, expect, a)
			wantVerificationFailed(t, err, ErrAuthentication)
		}
	})
	t.Run("wrong identity", func(t *testing.T) {
		_, err := Open(fresh(), expect, newHPKE(t, HPKESuiteP384))
		wantVerificationFailed(t, err, ErrNoIdentity)
	})
	t.Run("wrong identity claiming the key ID", func(t *testing.T) {
		_, err := Open(fresh(), expect, keyIDLiar{newHPKE(t, HPKESuiteP384), KeyIDOf(a.Recipient())})
		wantVerificationFailed(t, err, ErrAuthentication)
	})
	t.Run("no identity", func(t *testing.T) {
		_, err := Open(fresh(), expect)
		wantVerificationFailed(t, err, ErrNoIdentity)
	})
}

// keyIDLiar is an identity that claims another key's ID.
type keyIDLiar struct {
	*HPKEIdentity
	id string
}

func (k keyIDLiar) KeyID() string { return k.id }

func TestSealRefuses(t *testing.T) {
	r := recipientOf(t, newHPKE(t, HPKESuiteP384).Recipient())
	if _, err := Seal(testBinding, nil, r); err == nil {
		t.Error("sealed no items")
	}
	if _, err := Seal(testBinding, testItems); err == nil {
		t.Error("sealed to no recipient")
	}
	if _, err := Seal(testBinding, map[string][]byte{"spec.pki.dir/../x": []byte("x")}, r); err == nil {
		t.Error("sealed a path with ..")
	}
	if _, err := Seal(Binding{ClusterName: "a b", MachineName: "m", SpecDigest: testDigest}, testItems, r); err == nil {
		t.Error("sealed a cluster name with a space")
	}
	if _, err := Seal(Binding{ClusterName: "c", MachineName: "m"}, testItems, r); err == nil || !strings.Contains(err.Error(), "specDigest") {
		t.Errorf("sealed without a spec digest: %v", err)
	}
}

// downIdentity is an identity whose key service does not answer: its
// Unwrap fails with ErrUnavailable, as sealkms.Unavailable wraps a KMS
// call that timed out or was throttled.
type downIdentity struct{ Identity }

func (downIdentity) Unwrap(Stanza, []byte) ([]byte, error) {
	return nil, fmt.Errorf("kms decrypt: %w: dial tcp: i/o timeout", ErrUnavailable)
}

func TestUnavailableKeyServiceIsRetriedNotRefused(t *testing.T) {
	a, b := newHPKE(t, HPKESuiteP384), newHPKE(t, HPKESuiteP384)
	env, err := Seal(testBinding, testItems, recipientOf(t, a.Recipient()), recipientOf(t, b.Recipient()))
	if err != nil {
		t.Fatal(err)
	}
	expect := Expect{SpecDigest: testDigest}
	// Only the unavailable one: PayloadUnavailable, not VerificationFailed.
	_, err = Open(reparse(t, env), expect, downIdentity{a})
	if got, _ := errclass.Of(err); got != errclass.PayloadUnavailable || !errors.Is(err, ErrUnavailable) || !IsOpenError(err) {
		t.Fatalf("Open with an unavailable key service: class %q, err %v; want PayloadUnavailable wrapping ErrUnavailable", got, err)
	}
	// Another recipient that opens wins.
	got, err := Open(reparse(t, env), expect, downIdentity{a}, b)
	if err != nil {
		t.Fatalf("a second recipient should open: %v", err)
	}
	checkItems(t, got.Items)
	// A key that does not open is still VerificationFailed.
	c := newHPKE(t, HPKESuiteP384)
	_, err = Open(reparse(t, env), expect, c)
	if got, _ := errclass.Of(err); got != errclass.VerificationFailed {
		t.Errorf("Open with a wrong key: class %q, want VerificationFailed", got)
	}
}
