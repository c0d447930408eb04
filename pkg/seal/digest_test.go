package seal

import (
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// TestSpecDigest: comments, key order, indentation and quoting do not
// change the digest of a clear spec; any changed, added or removed value
// does, and so does a duplicate key (refused).
func TestSpecDigest(t *testing.T) {
	const base = "apiVersion: machineadm.io/v1alpha1\nkind: MachineBootstrapConfig\nspec:\n  node:\n    name: w1\n  join:\n    apiServerEndpoint: 10.0.0.1:6443\n    token: {file: /etc/machineadm/sealed/spec.join.token}\n"
	want := mustDigest(base)
	if !specDigestRE().MatchString(want) {
		t.Fatalf("digest %q", want)
	}
	for name, doc := range map[string]string{
		"comments and blank lines": "# sealed\n" + strings.Replace(base, "spec:\n", "spec: # the spec\n\n", 1),
		"key order":                "kind: MachineBootstrapConfig\napiVersion: machineadm.io/v1alpha1\nspec:\n  join:\n    token: {file: /etc/machineadm/sealed/spec.join.token}\n    apiServerEndpoint: 10.0.0.1:6443\n  node:\n    name: w1\n",
		"indentation and quoting":  "apiVersion: \"machineadm.io/v1alpha1\"\nkind: 'MachineBootstrapConfig'\nspec: {node: {name: w1}, join: {apiServerEndpoint: \"10.0.0.1:6443\", token: {file: /etc/machineadm/sealed/spec.join.token}}}\n",
	} {
		if got := mustDigest(doc); got != want {
			t.Errorf("%s: digest %s, want %s", name, got, want)
		}
	}
	for name, doc := range map[string]string{
		"node name":      strings.Replace(base, "name: w1", "name: w2", 1),
		"endpoint":       strings.Replace(base, "10.0.0.1", "10.0.0.9", 1),
		"sealed place":   strings.Replace(base, "/etc/machineadm/sealed/spec.join.token", "/tmp/token", 1),
		"added field":    base + "  host: {sysctl: {net.ipv4.ip_forward: \"1\"}}\n",
		"removed field":  strings.Replace(base, "    apiServerEndpoint: 10.0.0.1:6443\n", "", 1),
		"number as text": strings.Replace(base, "name: w1", "name: \"1\"", 1),
	} {
		if got := mustDigest(doc); got == want {
			t.Errorf("%s: the digest did not change", name)
		}
	}
	if d := mustDigest(strings.Replace(base, "name: w1", "name: \"1\"", 1)); d == mustDigest(strings.Replace(base, "name: w1", "name: 1", 1)) {
		t.Error("a string and a number have one digest")
	}
	for name, doc := range map[string]string{
		"duplicate key": base + "  node: {name: w2}\n",
		"empty":         "# nothing\n",
		"not YAML":      "spec: [\n",
	} {
		if d, err := SpecDigest([]byte(doc)); err == nil {
			t.Errorf("%s: digest %s, want an error", name, d)
		}
	}
}

// TestParseRefusesFirstEnvelopeVersion: an envelope of the earlier
// format (machineadm.io/v1alpha1, no specDigest) is refused with an
// InvalidSpec error that says to seal the spec again; so is a v1alpha2
// envelope without specDigest.
func TestParseRefusesFirstEnvelopeVersion(t *testing.T) {
	env, err := Seal(testBinding, testItems, recipientOf(t, newHPKE(t, HPKESuiteP384).Recipient()))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(string(doc), "apiVersion: "+APIVersion, "apiVersion: "+APIVersionV1Alpha1, 1)
	old = strings.Replace(old, "specDigest: "+testDigest+"\n", "", 1)
	if old == string(doc) {
		t.Fatal("the envelope was not rewritten")
	}
	_, err = Parse([]byte(old))
	if c, _ := errclass.Of(err); c != errclass.InvalidSpec || !strings.Contains(err.Error(), "seal the spec again") || !strings.Contains(err.Error(), "apiVersion") || strings.Contains(err.Error(), "specDigest") {
		t.Errorf("v1alpha1 envelope: %s %v", c, err)
	}
	noDigest := strings.Replace(string(doc), "specDigest: "+testDigest+"\n", "", 1)
	if _, err := Parse([]byte(noDigest)); err == nil || !strings.Contains(err.Error(), "specDigest") {
		t.Errorf("envelope without specDigest: %v", err)
	}
}
