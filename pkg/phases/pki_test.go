package phases

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/files"
)

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestImportPKI(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "pki")
	writeTree(t, src, map[string]string{"ca.crt": "CERT", "ca.key": "KEY", "etcd/ca.key": "EKEY", "sa.pub": "PUB"})
	changed, err := importPKI(files.Dir{Root: src}, files.Dir{Root: dst})
	if err != nil || !changed {
		t.Fatalf("import: %v %v", changed, err)
	}
	for name, mode := range map[string]os.FileMode{"ca.crt": 0o644, "ca.key": 0o600, "etcd/ca.key": 0o600, "sa.pub": 0o644} {
		fi, err := os.Stat(filepath.Join(dst, name))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v mode %v, want %v", name, err, fi.Mode().Perm(), mode)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "front-proxy-ca.crt")); err == nil {
		t.Error("absent file was created")
	}
	// Same content again: nothing to do.
	if changed, err := importPKI(files.Dir{Root: src}, files.Dir{Root: dst}); err != nil || changed {
		t.Errorf("second import: %v %v", changed, err)
	}
	// A different CA at the destination is never overwritten.
	writeTree(t, src, map[string]string{"ca.key": "OTHER"})
	_, err = importPKI(files.Dir{Root: src}, files.Dir{Root: dst})
	if c, _ := errclass.Of(err); err == nil || c != errclass.HostPreparationFailed {
		t.Errorf("different CA: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "ca.key")); string(b) != "KEY" {
		t.Error("existing CA key overwritten")
	}
	// ca.key is required.
	empty := t.TempDir()
	writeTree(t, empty, map[string]string{"ca.crt": "CERT"})
	_, err = importPKI(files.Dir{Root: empty}, files.Dir{Root: t.TempDir()})
	if c, _ := errclass.Of(err); c != errclass.PayloadUnavailable || !strings.Contains(err.Error(), "ca.key") {
		t.Errorf("missing ca.key: %v", err)
	}
}
