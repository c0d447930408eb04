//go:build !windows

package files

import (
	"os"
	"path/filepath"
	"testing"
)

// TestApplyMetaInPlaceSwapped: a file whose only mode differs, replaced
// between its Plan and Apply by another name of a file (a hard link to
// /etc/shadow, say), by another file (other content) or by a symlink out
// of the root, is not changed in place through that name: the path is
// written with the desired content instead, so the other name keeps its
// mode and other content does not get the mode, and a symlink is
// refused, not followed.
func TestApplyMetaInPlaceSwapped(t *testing.T) {
	for _, swap := range []string{"hard link", "other file", "symlink"} {
		t.Run(swap, func(t *testing.T) {
			dir := t.TempDir()
			shadow := filepath.Join(t.TempDir(), "shadow")
			if err := os.WriteFile(shadow, []byte("secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "conf")
			if err := os.WriteFile(p, []byte("a\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cur, err := ReadState(p)
			if err != nil {
				t.Fatal(err)
			}
			c := Plan(Desired{Path: "/conf", Content: []byte("a\n"), Mode: 0o644, UID: cur.UID, GID: cur.GID}, p, cur)
			if c.ContentChanged() || !c.MetaChanged() {
				t.Fatalf("want a mode-only change: %s", c.Summary())
			}
			// A local user who can write dir swaps the name.
			tmp := p + ".new"
			switch swap {
			case "hard link":
				err = os.Link(shadow, tmp)
			case "other file":
				err = os.WriteFile(tmp, []byte("other\n"), 0o600)
			default:
				err = os.Symlink(shadow, tmp)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
			err = Apply(c)
			if fi, serr := os.Stat(shadow); serr != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("Apply (%v) changed the swapped-in file: %v, %v", err, fi.Mode(), serr)
			}
			if swap == "symlink" {
				if err == nil {
					t.Error("Apply through a symlink swapped in succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(p); err != nil || fi.Mode().Perm() != 0o644 || fileLinks(fi) != 1 {
				t.Errorf("%s: %v, %v; want a file of its own, 0644", p, fi, err)
			}
			if b, err := os.ReadFile(p); err != nil || string(b) != "a\n" {
				t.Errorf("%s: %q, %v", p, b, err)
			}
		})
	}
}

// TestSetOwnerModeSwapped: SetOwnerMode of a file swapped after its
// Lstat for a symlink or another file changes neither the symlink's
// target nor the other file, and fails.
func TestSetOwnerModeSwapped(t *testing.T) {
	for _, swap := range []string{"symlink", "other file"} {
		t.Run(swap, func(t *testing.T) {
			dir := t.TempDir()
			shadow := filepath.Join(t.TempDir(), "shadow")
			if err := os.WriteFile(shadow, []byte("secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "server.key")
			if err := os.WriteFile(p, []byte("key\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if swap == "symlink" {
				err = os.Symlink(shadow, p+".new")
			} else {
				// A file of the user who can write dir.
				shadow = p + ".new"
				err = os.WriteFile(shadow, []byte("other\n"), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
			if swap != "symlink" {
				shadow = p
			}
			err = SetOwnerMode(p, fi, 0o644, os.Getuid(), os.Getgid())
			if sfi, serr := os.Stat(shadow); serr != nil || sfi.Mode().Perm() != 0o600 {
				t.Fatalf("SetOwnerMode (%v) changed the file swapped in: %v, %v", err, sfi.Mode(), serr)
			}
			if err == nil {
				t.Error("SetOwnerMode of a path swapped since its Lstat succeeded")
			}
		})
	}
}

// TestApplyMetaRevokesWrite: a file whose only mode or owner differ,
// and whose change takes writing away from someone (a world-writable
// file made 0644; a file of another user given to root), is replaced,
// not changed in place: a descriptor opened for writing before the
// change (by anyone, while the file was theirs to write) would write to
// the file in place after it, giving a root-owned 0644 file the content
// they chose. Writing through it after Apply leaves the path's content.
func TestApplyMetaRevokesWrite(t *testing.T) {
	cases := []struct {
		name     string
		mode     os.FileMode
		owner    int
		needRoot bool
	}{
		{"world-writable", 0o666, -1, false},
		{"group-writable", 0o664, -1, false},
		{"another owner's", 0o644, 4242, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot && os.Geteuid() != 0 {
				t.Skip("needs root to give a file another owner")
			}
			p := filepath.Join(t.TempDir(), "sudoers")
			if err := os.WriteFile(p, []byte("a\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			if tc.owner >= 0 {
				if err := os.Chown(p, tc.owner, tc.owner); err != nil {
					t.Fatal(err)
				}
			}
			// Opened for writing while the file is writable to them.
			w, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cur, err := ReadState(p)
			if err != nil {
				t.Fatal(err)
			}
			c := Plan(Desired{Path: "/sudoers", Content: []byte("a\n"), Mode: 0o644, UID: os.Getuid(), GID: os.Getgid()}, p, cur)
			if c.ContentChanged() || !c.MetaChanged() {
				t.Fatalf("want a mode or owner change only: %s", c.Summary())
			}
			if err := Apply(c); err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteAt([]byte("evil\n"), 0); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(p); err != nil || string(b) != "a\n" {
				t.Errorf("%s: %q, %v; want %q (written through a descriptor opened before the change)", p, b, err, "a\n")
			}
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if u, g := fileOwner(fi); fi.Mode().Perm() != 0o644 || u != os.Getuid() || g != os.Getgid() {
				t.Errorf("%s: %04o %d:%d", p, fi.Mode().Perm(), u, g)
			}
		})
	}
}
