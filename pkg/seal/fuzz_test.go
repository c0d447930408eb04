package seal

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// FuzzOpenEnvelope feeds the envelope parser and Open with mutations of a
// real envelope sealed to a fresh hpke identity, alone and behind a spec
// (the multi-document file a machine reads). Whatever the bytes:
//   - Parse, Split and Open never panic, and fail only with InvalidSpec
//     (a malformed document) or VerificationFailed (it does not open);
//   - a document that parses marshals to one that parses to the same
//     envelope;
//   - a document that opens yields exactly the sealed items: no mutation
//     gets past the AEAD tags, the wrapped key and the bound names with
//     other plaintext.
func FuzzOpenEnvelope(f *testing.F) {
	id := newHPKE(f, HPKESuiteP384)
	env, err := Seal(testBinding, testItems, recipientOf(f, id.Recipient()))
	if err != nil {
		f.Fatal(err)
	}
	doc, err := env.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(doc)
	f.Add(Join([]byte("apiVersion: machineadm.io/v1alpha1\nkind: MachineBootstrapConfig\n"), doc))
	f.Add(bytes.Replace(doc, []byte("cp1"), []byte("cp2"), 1))
	f.Add(bytes.Replace(doc, []byte(testDigest[7:15]), []byte(otherDigest[7:15]), 1))
	f.Add(bytes.Replace(doc, []byte(APIVersion), []byte(APIVersionV1Alpha1), 1))
	f.Add([]byte("kind: SealedSecrets\nitems: {}\n"))
	expect := Expect{ClusterName: testBinding.ClusterName, MachineName: testBinding.MachineName, SpecDigest: testBinding.SpecDigest}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, sealed, err := Split(data); err == nil && len(sealed) > 0 {
			data = sealed
		}
		env, err := Parse(data)
		if err != nil {
			if c, _ := errclass.Of(err); c != errclass.InvalidSpec {
				t.Fatalf("Parse error of class %s, want InvalidSpec: %v", c, err)
			}
			return
		}
		again, err := env.Marshal()
		if err != nil {
			t.Fatalf("a parsed envelope does not marshal: %v", err)
		}
		back, err := Parse(again)
		if err != nil {
			t.Fatalf("a marshalled envelope does not parse: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(env, back) {
			t.Fatalf("marshal and parse changed the envelope:\n%+v\n%+v", env, back)
		}
		opened, err := Open(env, expect, id)
		if err != nil {
			if c, _ := errclass.Of(err); c != errclass.VerificationFailed && c != errclass.InvalidSpec {
				t.Fatalf("Open error of class %s: %v", c, err)
			}
			return
		}
		if !reflect.DeepEqual(opened.Items, testItems) {
			t.Fatalf("an envelope opened to other items: %q", opened.Items)
		}
	})
}
