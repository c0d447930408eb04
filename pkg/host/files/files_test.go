//go:build !windows

package files

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestResolveStaysUnderRoot(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "etc/real"), 0o755))
	// Absolute link: must restart at root, not at the host's /.
	must(t, os.Symlink("/etc/real", filepath.Join(root, "etc/abs")))
	// Relative link climbing above root: clamped at root.
	must(t, os.Symlink("../../../../../../etc/real", filepath.Join(root, "etc/rel")))
	cases := map[string]string{
		"/etc/abs/x.conf": filepath.Join(root, "etc/real/x.conf"),
		"/etc/rel/x.conf": filepath.Join(root, "etc/real/x.conf"),
		"/etc/new/dir/f":  filepath.Join(root, "etc/new/dir/f"),
		"/":               root,
	}
	for in, want := range cases {
		got, err := Resolve(root, in)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"etc/x", "/etc/../../x", "../x"} {
		if _, err := Resolve(root, bad); !errors.Is(err, ErrEscapesRoot) {
			t.Errorf("Resolve(%q) error = %v, want ErrEscapesRoot", bad, err)
		}
	}
	// A link loop is an error, not a hang.
	must(t, os.Symlink("/loop", filepath.Join(root, "loop")))
	if _, err := Resolve(root, "/loop/x"); err == nil {
		t.Error("Resolve through a symlink loop: want error")
	}
}

func TestIDsFromRoot(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n# comment\netcd:x:1234:1235::/var/lib/etcd:/usr/sbin/nologin\n+nis\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\netcd:x:1235:\nssl-cert:x:111:etcd\n"), 0o644))
	ids, err := LoadIDs(root)
	must(t, err)
	for in, want := range map[string]int{"etcd": 1234, "root": 0, "4242": 4242} {
		if got, err := ids.UID(in); err != nil || got != want {
			t.Errorf("UID(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if got, err := ids.GID("ssl-cert"); err != nil || got != 111 {
		t.Errorf("GID(ssl-cert) = %d, %v", got, err)
	}
	if _, err := ids.UID("nobody-here"); err == nil || !strings.Contains(err.Error(), "/etc/passwd") {
		t.Errorf("UID(unknown) error = %v, want one naming /etc/passwd", err)
	}
	if _, err := ids.GID("etcd-nope"); err == nil {
		t.Error("GID(unknown): want error")
	}
}

// trickyContents are contents that YAML, templating or line-ending
// handling would mangle; they must land byte for byte.
func trickyContents(t *testing.T) map[string][]byte {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("payload\x00\x01\xff"))
	zw.Close()
	return map[string][]byte{
		"quotes":   []byte(`a "double" and 'single' quote` + "\n"),
		"hash":     []byte("# not a comment to us\nkey=value # trailing\n"),
		"template": []byte("{{ .Values.x }} {{- end }}\n"),
		"yamldoc":  []byte("---\napiVersion: v1\n---\n"),
		"crlf":     []byte("line one\r\nline two\r\n"),
		"noeol":    []byte("no newline at end"),
		"gzip":     gz.Bytes(),
		"empty":    {},
	}
}

func TestApplyByteExactAndIdempotent(t *testing.T) {
	root := t.TempDir()
	for name, content := range trickyContents(t) {
		d := Desired{Path: "/etc/tricky/" + name, Content: content, Mode: 0o640, UID: 1000, GID: 1001}
		hp, err := Resolve(root, d.Path)
		must(t, err)
		c := Plan(d, hp, mustState(t, hp))
		if !c.Changed() || !strings.HasPrefix(c.Summary(), "wrote ") {
			t.Fatalf("%s: first plan %q, want a write", name, c.Summary())
		}
		must(t, Apply(c))
		got, err := os.ReadFile(hp)
		must(t, err)
		if !bytes.Equal(got, content) {
			t.Errorf("%s: content %q, want %q", name, got, content)
		}
		fi, err := os.Stat(hp)
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != 0o640 || st.Uid != 1000 || st.Gid != 1001 {
			t.Errorf("%s: mode %o owner %d:%d, want 0640 1000:1001", name, fi.Mode().Perm(), st.Uid, st.Gid)
		}
		// No temporary file is left behind.
		left, _ := filepath.Glob(filepath.Join(filepath.Dir(hp), ".machineadm-*"))
		if len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
		// Second time: nothing to do, and Apply does not touch the file.
		old := fi.ModTime()
		past := old.Add(-time.Hour)
		must(t, os.Chtimes(hp, past, past))
		c2 := Plan(d, hp, mustState(t, hp))
		if c2.Changed() {
			t.Errorf("%s: second plan changed: %s", name, c2.Summary())
		}
		must(t, Apply(c2))
		fi2, _ := os.Stat(hp)
		if !fi2.ModTime().Equal(past) {
			t.Errorf("%s: mtime changed on an unchanged apply", name)
		}
	}
}

func TestMetadataOnlyChangeKeepsContentAndMtime(t *testing.T) {
	root := t.TempDir()
	hp := filepath.Join(root, "f")
	must(t, os.WriteFile(hp, []byte("same\n"), 0o644))
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	must(t, os.Chtimes(hp, past, past))
	c := Plan(Desired{Path: "/f", Content: []byte("same\n"), Mode: 0o600, UID: 7, GID: 8}, hp, mustState(t, hp))
	if c.ContentChanged() || !c.MetaChanged() || !strings.HasPrefix(c.Summary(), "set /f 0600 7:8") {
		t.Fatalf("plan: content %v meta %v %q", c.ContentChanged(), c.MetaChanged(), c.Summary())
	}
	must(t, Apply(c))
	st := mustState(t, hp)
	fi, _ := os.Stat(hp)
	if st.Mode != 0o600 || st.UID != 7 || st.GID != 8 || !fi.ModTime().Equal(past) {
		t.Errorf("after metadata change: %+v mtime %v", st, fi.ModTime())
	}
}

func TestAppendOnce(t *testing.T) {
	root := t.TempDir()
	hp := filepath.Join(root, "hosts")
	must(t, os.WriteFile(hp, []byte("127.0.0.1 localhost\n"), 0o644))
	a := Desired{Path: "/hosts", Content: []byte("10.0.0.1 api\n"), Mode: 0o644, Append: true}
	b := Desired{Path: "/hosts", Content: []byte("10.0.0.2 etcd\n"), Mode: 0o644, Append: true}
	for round := 0; round < 2; round++ {
		for _, d := range []Desired{a, b} {
			c := Plan(d, hp, mustState(t, hp))
			if round == 1 && c.Changed() {
				t.Errorf("round 2: append changed again: %s", c.Summary())
			}
			if round == 0 && !strings.HasPrefix(c.Summary(), "appended to /hosts") {
				t.Errorf("round 1: summary %q", c.Summary())
			}
			must(t, Apply(c))
		}
	}
	got, _ := os.ReadFile(hp)
	if string(got) != "127.0.0.1 localhost\n10.0.0.1 api\n10.0.0.2 etcd\n" {
		t.Errorf("content %q", got)
	}
	// Append to a missing file creates it.
	c := Plan(a, filepath.Join(root, "new"), State{})
	if string(c.New.Content) != "10.0.0.1 api\n" {
		t.Errorf("append to missing file: %q", c.New.Content)
	}
}

func TestRemove(t *testing.T) {
	root := t.TempDir()
	hp := filepath.Join(root, "dropin.conf")
	must(t, os.WriteFile(hp, []byte("x"), 0o644))
	c := Plan(Desired{Path: "/dropin.conf", Remove: true}, hp, mustState(t, hp))
	if !c.Changed() || c.Summary() != "removed /dropin.conf" {
		t.Fatalf("plan %q", c.Summary())
	}
	must(t, Apply(c))
	if _, err := os.Stat(hp); !os.IsNotExist(err) {
		t.Fatalf("file still there: %v", err)
	}
	if c := Plan(Desired{Path: "/dropin.conf", Remove: true}, hp, mustState(t, hp)); c.Changed() {
		t.Error("removing an absent file is a change")
	}
}

func TestReadStateRefusesDirectory(t *testing.T) {
	if _, err := ReadState(t.TempDir()); err == nil {
		t.Error("ReadState(directory): want error")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustState(t *testing.T, hp string) State {
	t.Helper()
	st, err := ReadState(hp)
	must(t, err)
	return st
}
