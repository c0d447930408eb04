package files

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNotRootInADirectoryItMayNotList: a run that is not root writes,
// examines and removes its own file in its own directory that it may
// search and write but not list (mode 0300), as it did through the
// directory's path: reaching the directory by descriptor needs no read
// permission on it (its fsync after a rename is best effort).
func TestNotRootInADirectoryItMayNotList(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown)")
	}
	base := t.TempDir()
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, 0o755))
	dir := filepath.Join(base, "d")
	must(t, os.Mkdir(dir, 0o700))
	must(t, os.Chown(dir, unprivileged, unprivileged))
	p := filepath.Join(dir, "x")
	var werr, rerr, derr, aerr error
	var st State
	var got []byte
	asUser(t, unprivileged, unprivileged, func() {
		must(t, os.Chmod(dir, 0o300))
		werr = WriteAtomic(p, []byte("x\n"), 0o644, -1, -1)
		if st, rerr = ReadState(p); rerr == nil {
			st, rerr = st.Load()
			got = st.Content
		}
		_, derr = Dir{Root: dir}.WriteFile("/y", []byte("y\n"), 0o600)
		aerr = Apply(Plan(Desired{Path: "/x", Remove: true}, p, st))
		must(t, os.Chmod(dir, 0o700))
	})
	if werr != nil {
		t.Errorf("WriteAtomic in a directory mode 0300: %v", werr)
	}
	if rerr != nil || string(got) != "x\n" {
		t.Errorf("ReadState in a directory mode 0300: %q, %v", got, rerr)
	}
	if derr != nil {
		t.Errorf("Dir.WriteFile in a directory mode 0300: %v", derr)
	}
	if aerr != nil {
		t.Errorf("removing in a directory mode 0300: %v", aerr)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("%s still there after its removal: %v", p, err)
	}
}
