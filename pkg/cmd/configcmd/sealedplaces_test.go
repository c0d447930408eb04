package configcmd

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
	"github.com/machineadm/machineadm/pkg/session"
	"github.com/machineadm/machineadm/pkg/spec"
)

// A sealed file whose clear spec no longer has a place for an item — a
// sealed file content whose mode was widened, a field removed — is refused
// when it is read (config validate, render, bootstrap before any phase),
// with exit code 2: the item paths are in the clear, no key is needed. A
// secret the envelope carries is not warned about as a missing file.
func TestSealedItemsWithoutAPlaceRefusedWhenRead(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc/machineadm/secrets"), 0o700)
	os.WriteFile(filepath.Join(root, "etc/machineadm/secrets/bootstrap-token"), []byte("abcdef.0123456789abcdef\n"), 0o600)
	doc := testspec.MinimalWorker + "  host:\n    files:\n      - path: /etc/app/secret.conf\n        mode: \"0600\"\n        content: \"password=hunter2hunter2\"\n"
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealspec.SealSpec([]byte(doc), sealspec.SealOptions{Recipients: []string{id.Recipient()}, MachineName: "w1", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", string(sealed.File))
	l, err := Validate(nil, good)
	if err != nil {
		t.Fatalf("Validate(sealed): %v", err)
	}
	for _, w := range l.Warnings {
		if strings.HasPrefix(w.Field, "spec.join.token") {
			t.Errorf("warning about a secret the envelope carries: %s", w)
		}
	}
	for name, bad := range map[string]string{
		"widened mode": strings.Replace(string(sealed.File), `mode: "0600"`, `mode: "0644"`, 1),
		"file removed": strings.Replace(string(sealed.File), "      - path: /etc/app/secret.conf\n        mode: \"0600\"\n", "      - path: /etc/app/other\n        content: x\n", 1),
	} {
		if bad == string(sealed.File) {
			t.Fatalf("%s: the edit did not apply:\n%s", name, sealed.File)
		}
		p := write(name+".yaml", bad)
		_, err := Validate(nil, p)
		if !spec.IsInvalidSpec(err) || session.ExitCode(err) != session.ExitBadInput || !strings.Contains(err.Error(), "spec.host.files[0].content") {
			t.Errorf("%s: Validate = %v (exit %d), want an invalid spec naming the item", name, err, session.ExitCode(err))
		}
		if _, err := session.LoadBytes(slog.New(slog.DiscardHandler), []byte(bad), p); !spec.IsInvalidSpec(err) {
			t.Errorf("%s: LoadBytes (render) = %v, want an invalid spec", name, err)
		}
	}
}
