//go:build !windows

package host

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/files"
)

// TestFilesAppendToHardLinkedFileRefused: an append entry whose path
// is another name of a file (a local user's hard link to /etc/shadow)
// is refused with an error naming the path, in a dry run too, and
// changes nothing: the path is not given the linked file's content
// with the entry's mode (0644: readable by everyone), and the other
// name gets no text. Once the path has a name of its own, the text is
// appended; an append that changes nothing is not refused.
func TestFilesAppendToHardLinkedFileRefused(t *testing.T) {
	h := newTestHost(t)
	shadow := filepath.Join(h.root, "etc/shadow")
	secret := "root:$6$secret:19000::::::\n"
	if err := os.WriteFile(shadow, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(h.root, "etc/app/conf")
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(shadow, dest); err != nil {
		t.Fatal(err)
	}
	cfg := filesSpec(t, `    - path: /etc/app/conf
      content: "extra = 1\n"
      mode: "0644"
      append: true
`)
	for _, dry := range []bool{true, false} {
		env := h.env(&bytes.Buffer{})
		env.DryRun = dry
		err := filesStepErr(t, cfg, env)
		if !errors.Is(err, files.ErrLinkedAppend) || !bytes.Contains([]byte(err.Error()), []byte("/etc/app/conf")) {
			t.Errorf("dry run %v: %v; want the append to /etc/app/conf refused", dry, err)
		}
		for _, p := range []string{shadow, dest} {
			b, err := os.ReadFile(p)
			fi, lerr := os.Lstat(p)
			if err != nil || lerr != nil || string(b) != secret || fi.Mode().Perm() != 0o600 {
				t.Fatalf("dry run %v: %s: %q %v, %v %v; want it unchanged", dry, p, b, fi.Mode(), err, lerr)
			}
		}
		if fi, _ := os.Lstat(dest); !sameFile(t, shadow, fi) {
			t.Fatalf("dry run %v: %s is no longer a name of %s", dry, dest, shadow)
		}
	}
	// A name of its own: appended, then nothing to do.
	if err := os.Remove(dest); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest, []byte("a = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runFilesStep(t, cfg, h.env(nil))
	if b, err := os.ReadFile(dest); err != nil || string(b) != "a = 0\nextra = 1\n" {
		t.Errorf("%s: %q, %v", dest, b, err)
	}
	// Linked again, the text already there and the mode the entry's:
	// nothing changes, so nothing is refused.
	if err := os.Link(dest, dest+".bak"); err != nil {
		t.Fatal(err)
	}
	if res := runFilesStep(t, cfg, h.env(nil)); res.Changed {
		t.Errorf("changed: %v", res.Changes)
	}
}

// filesStepErr checks and applies the files step alone and returns its
// error.
func filesStepErr(t *testing.T, cfg *machineadm.MachineBootstrapConfig, env *Env) error {
	t.Helper()
	for _, s := range Steps(cfg) {
		if s.Name != StepFiles {
			continue
		}
		if err := s.Check(context.Background(), env); err != nil {
			return err
		}
		_, err := s.Apply(context.Background(), env)
		return err
	}
	t.Fatal("no files step")
	return nil
}

func sameFile(t *testing.T, p string, fi os.FileInfo) bool {
	t.Helper()
	pfi, err := os.Lstat(p)
	return err == nil && fi != nil && os.SameFile(pfi, fi)
}
