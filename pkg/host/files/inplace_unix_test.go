//go:build !windows

package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestSetOwnerModeRefusesHardLink: SetOwnerMode of a file with other
// names (a local user's link to /etc/shadow), also one linked after it
// was examined, is refused with an error naming it: the other name
// keeps its mode, and no copy of its content gets the new mode or owner.
func TestSetOwnerModeRefusesHardLink(t *testing.T) {
	for _, since := range []bool{false, true} {
		dir := t.TempDir()
		shadow := filepath.Join(dir, "shadow")
		if err := os.WriteFile(shadow, []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "server.key")
		var fi os.FileInfo
		var err error
		if since {
			// Examined with one name: made world-writable so that the
			// change (0644) replaces it rather than changing it in place.
			p = shadow
			if err := os.Chmod(shadow, 0o666); err != nil {
				t.Fatal(err)
			}
			if fi, err = os.Lstat(p); err != nil {
				t.Fatal(err)
			}
			err = os.Link(shadow, filepath.Join(dir, "other"))
		} else if err = os.Link(shadow, p); err == nil {
			fi, err = os.Lstat(p)
		}
		if err != nil {
			t.Fatal(err)
		}
		old, _ := os.Lstat(shadow)
		err = SetOwnerMode(p, fi, 0o644, os.Getuid(), os.Getgid())
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "hard links") {
			t.Errorf("linked since examined %v: %v; want an error naming %s", since, err, p)
		}
		nfi, serr := os.Lstat(p)
		if serr != nil || !os.SameFile(nfi, old) || nfi.Mode().Perm() != old.Mode().Perm() {
			t.Errorf("linked since examined %v: %s changed: %v, %v", since, p, nfi.Mode(), serr)
		}
	}
}

// TestSetOwnerModeCopyChecked: a file whose change takes writing away
// from someone (world-writable, made 0644) is replaced by a copy, so a
// descriptor opened for writing before writes to the old file; written
// to after it was examined (grown, or rewritten to the same size), it is
// refused, not copied (the copy would be of other bytes than examined, or
// never end while the writer appends), and stays as it is.
func TestSetOwnerModeCopyChecked(t *testing.T) {
	for _, write := range []string{"none", "grown", "rewritten"} {
		t.Run(write, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "sudoers")
			if err := os.WriteFile(p, []byte("a\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o666); err != nil {
				t.Fatal(err)
			}
			w, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			want := "a\n"
			switch write {
			case "grown":
				_, err = w.WriteAt([]byte("evil\n"), 2)
				want = "a\nevil\n"
			case "rewritten":
				// After the clock tick of the Lstat: the ctime moves on.
				time.Sleep(20 * time.Millisecond)
				_, err = w.WriteAt([]byte("b\n"), 0)
				want = "b\n"
			}
			if err != nil {
				t.Fatal(err)
			}
			err = SetOwnerMode(p, fi, 0o644, os.Getuid(), os.Getgid())
			nfi, serr := os.Lstat(p)
			if serr != nil {
				t.Fatal(serr)
			}
			if write != "none" {
				if err == nil || !strings.Contains(err.Error(), p) || !os.SameFile(fi, nfi) || nfi.Mode().Perm() != 0o666 {
					t.Errorf("%v, same file %v, %04o; want %s refused, left as it is", err, os.SameFile(fi, nfi), nfi.Mode().Perm(), p)
				}
			} else {
				if err != nil || os.SameFile(fi, nfi) || nfi.Mode().Perm() != 0o644 {
					t.Errorf("%v, same file %v, %04o; want %s replaced, 0644", err, os.SameFile(fi, nfi), nfi.Mode().Perm(), p)
				}
				if _, err := w.WriteAt([]byte("evil\n"), 0); err != nil {
					t.Fatal(err)
				}
			}
			if b, err := os.ReadFile(p); err != nil || string(b) != want {
				t.Errorf("%s: %q, %v; want %q", p, b, err, want)
			}
		})
	}
}
