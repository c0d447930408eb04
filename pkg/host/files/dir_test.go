package files

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/machineadm/machineadm/internal/testfifo"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

func TestDirWriteFileConfinedAndIdempotent(t *testing.T) {
	root := t.TempDir()
	d := Dir{Root: root}
	changed, err := d.WriteFile("/etc/kubeadm/config.yaml", []byte("a"), 0o600)
	if err != nil || !changed {
		t.Fatalf("first write: changed %v err %v", changed, err)
	}
	fi, err := os.Stat(filepath.Join(root, "etc/kubeadm/config.yaml"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v err %v", fi.Mode(), err)
	}
	if di, _ := os.Stat(filepath.Join(root, "etc/kubeadm")); di.Mode().Perm() != 0o700 {
		t.Errorf("parent directory mode %v, want 0700", di.Mode().Perm())
	}
	if changed, err := d.WriteFile("/etc/kubeadm/config.yaml", []byte("a"), 0o600); err != nil || changed {
		t.Errorf("same bytes rewritten: changed %v err %v", changed, err)
	}
	if got, err := d.ReadFile("/etc/kubeadm/config.yaml"); err != nil || string(got) != "a" {
		t.Errorf("ReadFile %q %v", got, err)
	}
	// A link pointing outside the root (absolute target) restarts at the
	// root: nothing lands in the other directory.
	if err := os.Symlink("/escape", filepath.Join(root, "abs")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteFile("/abs/x", []byte("b"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "escape/x")); err != nil {
		t.Errorf("absolute link not confined to the root: %v", err)
	}
	if _, err := d.WriteFile("../x", []byte("b"), 0o600); !errors.Is(err, ErrEscapesRoot) {
		t.Errorf("relative path: %v", err)
	}
}

// TestDirReadFileBounded: Dir reads only regular files of at most
// MaxDirFileSize bytes, and a FIFO at the path neither blocks nor is read.
func TestDirReadFileBounded(t *testing.T) {
	root := t.TempDir()
	d := Dir{Root: root}
	if err := os.WriteFile(filepath.Join(root, "big"), make([]byte, MaxDirFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadFile("/big"); !readlimit.IsTooLarge(err) {
		t.Errorf("a file over MaxDirFileSize: %v, want a too-large error", err)
	}
	testfifo.Make(t, filepath.Join(root, "fifo"))
	var nr *readlimit.NotRegularError
	if _, err := d.ReadFile("/fifo"); !errors.As(err, &nr) {
		t.Errorf("a FIFO: %v, want a not-regular error", err)
	}
	if err := os.WriteFile(filepath.Join(root, "ok"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := d.ReadFile("/ok"); err != nil || string(b) != "x" {
		t.Errorf("a small file: %q, %v", b, err)
	}
}
