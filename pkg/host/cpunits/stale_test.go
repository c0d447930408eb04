package cpunits_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// CredentialsStale reads the installed unit only: stale once a credential
// file it names was rewritten after the unit was, not before; false for a
// unit not installed or without a stamp.
func TestCredentialsStale(t *testing.T) {
	root := t.TempDir()
	if stale, err := cpunits.CredentialsStale(root, "kube-apiserver"); stale || err != nil {
		t.Fatalf("no unit: %v, %v", stale, err)
	}
	write := func(p, content string) {
		t.Helper()
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("/etc/kubernetes/pki/ca.crt", "ca")
	write("/etc/kubernetes/pki/50%/apiserver.crt", "one")
	c := apiserver()
	c.Command = append(append([]string{}, c.Command...), "--client-ca-file=/etc/kubernetes/pki/ca.crt", "--tls-cert-file=/etc/kubernetes/pki/50%/apiserver.crt")
	c.Credentials = []cpunits.Credential{{ID: "client-ca-file", Path: "/etc/kubernetes/pki/ca.crt"}, {ID: "tls-cert-file", Path: "/etc/kubernetes/pki/50%/apiserver.crt"}}
	install := func(c cpunits.Component) {
		t.Helper()
		fs, err := cpunits.Render(c)
		if err != nil {
			t.Fatal(err)
		}
		write(fs[0].Path, string(fs[0].Content))
	}
	install(c) // no stamp
	if stale, err := cpunits.CredentialsStale(root, "kube-apiserver"); stale || err != nil {
		t.Fatalf("a unit without a stamp: %v, %v", stale, err)
	}
	stamped, err := cpunits.StampCredentials(root, c)
	if err != nil {
		t.Fatal(err)
	}
	install(stamped)
	if stale, err := cpunits.CredentialsStale(root, "kube-apiserver"); stale || err != nil {
		t.Errorf("a unit stamped with its files as they are: %v, %v", stale, err)
	}
	write("/etc/kubernetes/pki/50%/apiserver.crt", "renewed")
	if stale, err := cpunits.CredentialsStale(root, "kube-apiserver"); !stale || err != nil {
		t.Errorf("a credential file rewritten after the unit: %v, %v; want stale", stale, err)
	}
}
