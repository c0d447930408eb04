package files

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
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
