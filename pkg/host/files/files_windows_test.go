package files

import (
	"os"
	"path/filepath"
	"testing"
)

// tempDir is os.MkdirTemp with a best-effort cleanup: t.TempDir's cleanup
// check fails under wine 8 (docs/windows.md), where these tests run in CI.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "files-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// TestWindowsApplyAndRerun: a file with a Linux-style mode and owner is
// written on Windows (no chown, which Windows refuses), and planning it
// again finds nothing to change, so a second run is Unchanged.
func TestWindowsApplyAndRerun(t *testing.T) {
	p := filepath.Join(tempDir(t), "etc", "kubelet.conf")
	d := Desired{Path: `C:\etc\kubelet.conf`, Content: []byte("a: 1\n"), Mode: 0o600, UID: 1000, GID: 1000}
	cur, err := ReadState(p)
	if err != nil {
		t.Fatal(err)
	}
	c := Plan(d, p, cur)
	if !c.Changed() {
		t.Fatal("a missing file must be a change")
	}
	if err := Apply(c); err != nil {
		t.Fatalf("Apply on Windows: %v", err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "a: 1\n" {
		t.Fatalf("content %q, %v", got, err)
	}
	cur, err = ReadState(p)
	if err != nil {
		t.Fatal(err)
	}
	if c := Plan(d, p, cur); c.Changed() {
		t.Fatalf("second plan changes %s: mode %04o→%04o, owner %d:%d→%d:%d", p, c.Old.Mode, c.New.Mode, c.Old.UID, c.Old.GID, c.New.UID, c.New.GID)
	}
}

// TestWindowsReadOnlyIsTheOnlyModeBit: making a file read-only (mode
// 0444) is a metadata change Apply makes; 0644 and 0600 are the same mode
// to Windows.
func TestWindowsReadOnlyIsTheOnlyModeBit(t *testing.T) {
	p := filepath.Join(tempDir(t), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cur, err := ReadState(p)
	if err != nil {
		t.Fatal(err)
	}
	if c := Plan(Desired{Path: `C:\f`, Content: []byte("x"), Mode: 0o600}, p, cur); c.Changed() {
		t.Fatalf("0644 to 0600 is not a change on Windows: %s", c.Summary())
	}
	c := Plan(Desired{Path: `C:\f`, Content: []byte("x"), Mode: 0o444}, p, cur)
	if !c.MetaChanged() {
		t.Fatal("0644 to 0444 must be a metadata change")
	}
	if err := Apply(c); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm()&0o200 != 0 {
		t.Fatalf("file not read-only after Apply: %v %v", fi.Mode(), err)
	}
	_ = os.Chmod(p, 0o666) // so the cleanup can remove it
}
