//go:build !windows

package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two\r\n\x00"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "two\r\n\x00" || fi.Mode().Perm() != 0o640 {
		t.Errorf("got %q mode %v", b, fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

func TestWriteFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory in the way of the rename makes the write fail.
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); err == nil {
		t.Error("write into a missing directory succeeded")
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "keep"), nil, 0o644)
	if err := WriteFile(sub, []byte("x"), 0o644); err == nil {
		t.Error("replacing a non-empty directory succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("old file changed: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("temporary files left: %v", ents)
	}
}

func TestWriteFileOwned(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := WriteFileOwned(p, []byte("x"), 0o600, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 1234 || st.Gid != 5678 || fi.Mode().Perm() != 0o600 {
		t.Errorf("owner %d:%d mode %v", st.Uid, st.Gid, fi.Mode().Perm())
	}
}
