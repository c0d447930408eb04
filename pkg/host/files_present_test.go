//go:build !windows

package host

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/files"
)

// TestFilesRerunFetchesNothingWhenInPlace: a source whose content is
// already at its destination (a rerun, an upgrade run again after it
// succeeded) is not fetched: a rerun with the source's server gone
// changes nothing and succeeds, and with the server up sends it no
// request; a mode that differs is set in place. A destination with
// other content still fetches, and fails as before when the source is
// unreachable.
func TestFilesRerunFetchesNothingWhenInPlace(t *testing.T) {
	h := newTestHost(t)
	dest := filepath.Join(h.root, "usr/bin/tool")
	sum := writeBigFile(t, dest, 3<<20, 7)
	if err := os.Chmod(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.ServeFile(w, r, dest)
	}))
	defer srv.Close()
	load := func(url, mode string) *machineadm.MachineBootstrapConfig {
		t.Helper()
		return filesSpec(t, fmt.Sprintf(`    - path: /usr/bin/tool
      mode: %q
      source: {url: %q, sha256: %s}
`, mode, url, sum))
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("server up", func(t *testing.T) {
		var out bytes.Buffer
		if res := runFilesStep(t, load(srv.URL+"/tool", "0755"), h.env(&out)); res.Changed {
			t.Errorf("a rerun changed something:\n%s", out.String())
		}
		if n := requests.Load(); n != 0 {
			t.Errorf("the source was fetched %d times for a file already in place", n)
		}
	})

	// A loopback address nothing listens on any more.
	gone := httptest.NewServer(nil)
	goneURL := gone.URL + "/tool"
	gone.Close()

	t.Run("server gone", func(t *testing.T) {
		var out bytes.Buffer
		if res := runFilesStep(t, load(goneURL, "0755"), h.env(&out)); res.Changed {
			t.Errorf("a rerun changed something:\n%s", out.String())
		}
	})

	t.Run("mode differs", func(t *testing.T) {
		var out bytes.Buffer
		if res := runFilesStep(t, load(goneURL, "0700"), h.env(&out)); !res.Changed {
			t.Errorf("the mode was not set:\n%s", out.String())
		}
		nfi, err := os.Stat(dest)
		if err != nil {
			t.Fatal(err)
		}
		if nfi.Mode().Perm() != 0o700 || !os.SameFile(fi, nfi) {
			t.Errorf("%s: mode %v, same file %v; want 0700 set in place", dest, nfi.Mode().Perm(), os.SameFile(fi, nfi))
		}
		if got := fileSHA256(t, dest); got != sum {
			t.Errorf("the content changed: sha256 %s, want %s", got, sum)
		}
	})

	// A symlink at the destination is followed inside the root, as for
	// every write (Resolve): the file it names has the content, so
	// nothing is fetched and the link stays (docs/host-preparation.md).
	t.Run("symlink in the root", func(t *testing.T) {
		link := filepath.Join(h.root, "usr/bin/tool-link")
		if err := os.Symlink("tool", link); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(link)
		cfg := load(goneURL, "0700")
		cfg.Spec.Host.Files[0].Path = "/usr/bin/tool-link"
		var out bytes.Buffer
		if res := runFilesStep(t, cfg, h.env(&out)); res.Changed {
			t.Errorf("a symlink to the content in place changed something:\n%s", out.String())
		}
		if lfi, err := os.Lstat(link); err != nil || lfi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink: %v", link, err)
		}
	})

	t.Run("other content", func(t *testing.T) {
		writeBigFile(t, dest, 3<<20, 8)
		env := h.env(nil)
		var err error
		for _, s := range Steps(load(goneURL, "0700")) {
			if s.Name == StepFiles {
				err = s.Check(t.Context(), env)
			}
		}
		var ce *errclass.Error
		if err == nil || !errors.As(err, &ce) || ce.Class != errclass.PayloadUnavailable || !strings.Contains(err.Error(), "source.url") {
			t.Fatalf("check with other content at the destination and the source gone: %v, want PayloadUnavailable naming source.url", err)
		}
	})
}

// TestFilesFileSourceUnavailableHint: a file:// source that cannot be
// read (missing, not a regular file) fails with PayloadUnavailable and a
// hint about the path on the machine: it was the download's (proxy,
// DNS, firewall), which a local path has nothing to do with.
func TestFilesFileSourceUnavailableHint(t *testing.T) {
	h := newTestHost(t)
	cfg := filesSpec(t, `      - path: /usr/bin/tool
        source: {url: "file:///opt/missing", sha256: "`+strings.Repeat("0", 64)+`"}
`)
	var err error
	for _, s := range Steps(cfg) {
		if s.Name == StepFiles {
			err = s.Check(t.Context(), h.env(nil))
		}
	}
	var ce *errclass.Error
	if !errors.As(err, &ce) || ce.Class != errclass.PayloadUnavailable {
		t.Fatalf("check of a missing file:// source: %v, want PayloadUnavailable", err)
	}
	if strings.Contains(ce.Hint, "DNS") || !strings.Contains(ce.Hint, "file://") {
		t.Errorf("hint %q: want one about the file:// path on the machine", ce.Hint)
	}
}

// TestFilesSourceTooLargeHint: a source larger than files.MaxFetchBytes
// (a file:// path, here a sparse file) fails with PayloadUnavailable and
// a hint about the size limit: it was the one for a file:// path that
// cannot be read ("a regular file ... that machineadm may read"), which
// it is, and sent whoever read it looking at permissions.
func TestFilesSourceTooLargeHint(t *testing.T) {
	h := newTestHost(t)
	big := filepath.Join(h.root, "opt/big")
	if err := os.MkdirAll(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, files.MaxFetchBytes+1); err != nil {
		t.Fatal(err)
	}
	cfg := filesSpec(t, `      - path: /usr/bin/tool
        source: {url: "file:///opt/big", sha256: "`+strings.Repeat("0", 64)+`"}
`)
	var err error
	for _, s := range Steps(cfg) {
		if s.Name == StepFiles {
			err = s.Check(t.Context(), h.env(nil))
		}
	}
	var ce *errclass.Error
	if !errors.As(err, &ce) || ce.Class != errclass.PayloadUnavailable {
		t.Fatalf("check of a source larger than the limit: %v, want PayloadUnavailable", err)
	}
	if !strings.Contains(ce.Hint, "256 MiB") {
		t.Errorf("hint %q: want one about the size limit (256 MiB)", ce.Hint)
	}
}
