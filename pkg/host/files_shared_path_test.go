//go:build !windows

package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestFilesSourceThenAppendRerunIsNoOp: a source followed by an append
// on the same path converges once: a rerun that finds the source's
// content with the appended text in place changes nothing (the file is
// not rewritten, its inode and mtime stay) and fetches nothing, even
// with the source's server gone. A destination holding anything else
// (other content, the source's content alone, the text appended twice)
// converges to source + appended text. A content entry followed by an
// append converges the same way.
func TestFilesSourceThenAppendRerunIsNoOp(t *testing.T) {
	h := newTestHost(t)
	base := []byte("# base config\nkey = value\n")
	extra := "extra = 1\n"
	want := string(base) + extra
	s := sha256.Sum256(base)
	sum := hex.EncodeToString(s[:])
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write(base)
	}))
	defer srv.Close()
	gone := httptest.NewServer(nil)
	goneURL := gone.URL + "/conf"
	gone.Close()
	load := func(url string) string {
		return fmt.Sprintf(`    - path: /etc/app/conf
      source: {url: %q, sha256: %s}
    - path: /etc/app/conf
      content: %q
      append: true
`, url, sum, extra)
	}
	dest := filepath.Join(h.root, "etc/app/conf")
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(dest)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	if res := runFilesStep(t, filesSpec(t, load(srv.URL+"/conf")), h.env(nil)); !res.Changed {
		t.Fatalf("first run changed nothing")
	}
	if got := read(); got != want {
		t.Fatalf("after the first run: %q, want %q", got, want)
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	requests.Store(0)

	for _, url := range []string{srv.URL + "/conf", goneURL} {
		var out bytes.Buffer
		res := runFilesStep(t, filesSpec(t, load(url)), h.env(&out))
		if res.Changed {
			t.Errorf("rerun (%s) changed something: %v", url, res.Changes)
		}
		if n := requests.Load(); n != 0 {
			t.Errorf("rerun (%s) fetched the source %d times though source + append is in place", url, n)
		}
		nfi, err := os.Stat(dest)
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(fi, nfi) || !nfi.ModTime().Equal(fi.ModTime()) {
			t.Errorf("rerun (%s) replaced %s", url, dest)
		}
		if got := read(); got != want {
			t.Errorf("after a rerun: %q, want %q", got, want)
		}
	}

	for _, other := range []string{"tampered\n", string(base), want + extra, extra + string(base) + extra, ""} {
		if err := os.WriteFile(dest, []byte(other), 0o644); err != nil {
			t.Fatal(err)
		}
		if res := runFilesStep(t, filesSpec(t, load(srv.URL+"/conf")), h.env(nil)); !res.Changed {
			t.Errorf("destination %q: nothing changed", other)
		}
		if got := read(); got != want {
			t.Errorf("destination %q converged to %q, want %q", other, got, want)
		}
	}

	t.Run("content then append", func(t *testing.T) {
		entries := fmt.Sprintf(`    - path: /etc/app/other
      content: %q
    - path: /etc/app/other
      content: %q
      append: true
`, base, extra)
		if res := runFilesStep(t, filesSpec(t, entries), h.env(nil)); !res.Changed {
			t.Fatal("first run changed nothing")
		}
		p := filepath.Join(h.root, "etc/app/other")
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if res := runFilesStep(t, filesSpec(t, entries), h.env(nil)); res.Changed {
			t.Errorf("rerun changed something: %v", res.Changes)
		}
		nfi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != want || !os.SameFile(fi, nfi) {
			t.Errorf("after the rerun: %q (same file %v), want %q unchanged", b, os.SameFile(fi, nfi), want)
		}
	})
}

// TestFilesModeChangeBreaksHardLink: a file whose content is already the
// spec's but whose mode or owner differ is not changed in place when
// another name links to it (nlink > 1, a local user's hard link to
// /etc/shadow with fs.protected_hardlinks=0): it is replaced, so the
// other name keeps its mode, owner and content.
func TestFilesModeChangeBreaksHardLink(t *testing.T) {
	h := newTestHost(t)
	content := []byte("shared secret\n")
	s := sha256.Sum256(content)
	srcFile := filepath.Join(h.root, "srv/payload")
	if err := os.MkdirAll(filepath.Dir(srcFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(srcFile, content, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, entry string }{
		{"content", fmt.Sprintf("content: %q", content)},
		{"source", fmt.Sprintf("source: {url: \"file:///srv/payload\", sha256: %s}", hex.EncodeToString(s[:]))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shadow := filepath.Join(h.root, "etc/shadow-"+tc.name)
			dest := filepath.Join(h.root, "etc/app/"+tc.name)
			if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(shadow, content, 0o640); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(shadow, 0o640); err != nil {
				t.Fatal(err)
			}
			wantGID := os.Getgid()
			root := os.Geteuid() == 0
			if root {
				wantGID = 42
				if err := os.Chown(shadow, 0, wantGID); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Link(shadow, dest); err != nil {
				t.Fatal(err)
			}
			owner := ""
			if !root {
				owner = fmt.Sprintf("\n      owner: \"%d\"\n      group: \"%d\"", os.Getuid(), os.Getgid())
			}
			cfg := filesSpec(t, fmt.Sprintf("    - path: /etc/app/%s\n      mode: \"0644\"%s\n      %s\n", tc.name, owner, tc.entry))
			if res := runFilesStep(t, cfg, h.env(nil)); !res.Changed {
				t.Fatal("the mode was not changed")
			}
			sfi, err := os.Stat(shadow)
			if err != nil {
				t.Fatal(err)
			}
			dfi, err := os.Stat(dest)
			if err != nil {
				t.Fatal(err)
			}
			if os.SameFile(sfi, dfi) {
				t.Errorf("%s is still a hard link to %s", dest, shadow)
			}
			if sfi.Mode().Perm() != 0o640 || int(sfi.Sys().(*syscall.Stat_t).Gid) != wantGID {
				t.Errorf("the other name %s got mode %04o gid %d, want 0640 gid %d untouched", shadow, sfi.Mode().Perm(), sfi.Sys().(*syscall.Stat_t).Gid, wantGID)
			}
			if dfi.Mode().Perm() != 0o644 {
				t.Errorf("%s: mode %04o, want 0644", dest, dfi.Mode().Perm())
			}
			if root && dfi.Sys().(*syscall.Stat_t).Gid != 0 {
				t.Errorf("%s: gid %d, want 0", dest, dfi.Sys().(*syscall.Stat_t).Gid)
			}
			for _, p := range []string{shadow, dest} {
				if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, content) {
					t.Errorf("%s: %q, %v; want the content kept", p, b, err)
				}
			}
			// A file with one name is still changed in place.
			if err := os.Chmod(dest, 0o600); err != nil {
				t.Fatal(err)
			}
			if res := runFilesStep(t, cfg, h.env(nil)); !res.Changed {
				t.Fatal("the mode was not changed")
			}
			nfi, err := os.Stat(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(dfi, nfi) || nfi.Mode().Perm() != 0o644 {
				t.Errorf("%s: mode %04o, same file %v; want 0644 set in place", dest, nfi.Mode().Perm(), os.SameFile(dfi, nfi))
			}
		})
	}
}
