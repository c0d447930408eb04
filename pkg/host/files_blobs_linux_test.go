package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stagedFiles counts this process's open files under one of dirs that
// have no name any more ("… (deleted)": an unnamed O_TMPFILE file, or a
// temporary file removed from $TMPDIR), as staged Blobs are.
func stagedFiles(t *testing.T, dirs ...string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasSuffix(l, " (deleted)") {
			continue
		}
		for _, d := range dirs {
			if strings.HasPrefix(l, d+"/") {
				n++
				break
			}
		}
	}
	return n
}

// TestFilesStagedBlobsClosed: the content the files step's check staged
// (a Blob: an unnamed file beside its destination, or one in $TMPDIR) is
// freed whenever the plan is not applied or was applied: a check that
// fails on a later entry, a check that succeeds followed by another
// step's that fails, a run that ends before the apply (Env.Release), a
// check run again, and an apply.
func TestFilesStagedBlobsClosed(t *testing.T) {
	h := newTestHost(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	staged := func(t *testing.T) int { return stagedFiles(t, h.root, tmp) }
	payload := filepath.Join(h.root, "srv/payload")
	sum := writeBigFile(t, payload, 2<<20, 1)
	for _, d := range []string{"opt/a", "opt/b"} {
		if err := os.MkdirAll(filepath.Join(h.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Staged beside its destination (/opt/a exists), in $TMPDIR
	// (/opt/new does not), and beside it again.
	sources := fmt.Sprintf(`    - path: /opt/a/bin
      source: {url: "file:///srv/payload", sha256: %s}
    - path: /opt/new/bin
      source: {url: "file:///srv/payload", sha256: %s}
    - path: /opt/b/bin
      source: {url: "file:///srv/payload", sha256: %s}
`, sum, sum, sum)
	filesStep := func(t *testing.T, entries string) Step {
		t.Helper()
		for _, s := range Steps(filesSpec(t, entries)) {
			if s.Name == StepFiles {
				return s
			}
		}
		t.Fatal("no files step")
		return Step{}
	}
	ctx := context.Background()

	t.Run("check fails on a later entry", func(t *testing.T) {
		before := staged(t)
		// A mode the spec's validation accepts but an owner that is
		// not in the root's databases: the check fails after staging.
		s := filesStep(t, sources+`    - path: /etc/app/conf
      content: "x"
      owner: nobody-here
`)
		if err := s.Check(ctx, h.env(nil)); err == nil || !strings.Contains(err.Error(), "spec.host.files[3]") {
			t.Fatalf("check: %v, want an error naming spec.host.files[3]", err)
		}
		if n := staged(t); n != before {
			t.Errorf("%d staged files still open after the failed check (before %d)", n, before)
		}
	})

	t.Run("a later step's check fails", func(t *testing.T) {
		before := staged(t)
		cfg := filesSpec(t, sources)
		cfg.Spec.Host.Sysctl = map[string]string{"net.no.such.key": "1"}
		env := h.env(nil)
		if err := Check(ctx, env, Steps(cfg)); err == nil {
			t.Fatal("check with an unknown sysctl key passed")
		}
		if n := staged(t); n != before {
			t.Errorf("%d staged files still open after the failed check (before %d)", n, before)
		}
	})

	t.Run("run ends before the apply", func(t *testing.T) {
		before := staged(t)
		s := filesStep(t, sources)
		env := h.env(nil)
		if err := s.Check(ctx, env); err != nil {
			t.Fatal(err)
		}
		if n := staged(t); n != before+3 {
			t.Fatalf("%d staged files open after the check, want %d", n, before+3)
		}
		env.Release()
		if n := staged(t); n != before {
			t.Errorf("%d staged files still open after Release (before %d)", n, before)
		}
		// An Apply after it checks again.
		if _, err := s.Apply(ctx, env); err != nil {
			t.Fatal(err)
		}
		if got := fileSHA256(t, filepath.Join(h.root, "opt/new/bin")); got != sum {
			t.Errorf("opt/new/bin: sha256 %s, want %s", got, sum)
		}
		for _, p := range []string{"opt/a/bin", "opt/new/bin", "opt/b/bin"} {
			os.Remove(filepath.Join(h.root, p))
		}
	})

	t.Run("check run again", func(t *testing.T) {
		before := staged(t)
		s := filesStep(t, sources)
		env := h.env(nil)
		for range 2 {
			if err := s.Check(ctx, env); err != nil {
				t.Fatal(err)
			}
		}
		if n := staged(t); n != before+3 {
			t.Errorf("%d staged files open after two checks, want %d (one plan's)", n, before+3)
		}
		if _, err := s.Apply(ctx, env); err != nil {
			t.Fatal(err)
		}
		if n := staged(t); n != before {
			t.Errorf("%d staged files still open after the apply (before %d)", n, before)
		}
		for _, p := range []string{"opt/a/bin", "opt/new/bin", "opt/b/bin"} {
			if got := fileSHA256(t, filepath.Join(h.root, p)); got != sum {
				t.Errorf("%s: sha256 %s, want %s", p, got, sum)
			}
		}
	})
}
