//go:build unix

package session

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/report"
)

// A journal that claims this spec's bootstrap finished, on a host that
// shows nothing of it (a forged or stale state file), yields neither
// Succeeded nor the success sentinel: the run starts again and fails where
// the host is (here: no token file, in inputs-check). A hard-linked
// journal refuses the run, classified, with a hint, writing no sentinel.
func TestJournalDoesNotMakeABlankHostSucceed(t *testing.T) {
	dir := t.TempDir()
	specFile := filepath.Join(dir, "w.yaml")
	doc := []byte(testspec.MinimalWorker)
	if err := os.WriteFile(specFile, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(doc)
	journal := `{"specDigest":"sha256:` + hex.EncodeToString(sum[:]) + `"}` + "\n" + `{"finishedAt":"2026-01-01T00:00:00Z"}` + "\n"
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, work string)
		class errclass.Class
	}{
		{"forged journal", func(t *testing.T, work string) {
			if err := os.WriteFile(filepath.Join(work, "state.jsonl"), []byte(journal), 0o600); err != nil {
				t.Fatal(err)
			}
		}, errclass.PayloadUnavailable},
		{"hard-linked journal", func(t *testing.T, work string) {
			other := filepath.Join(t.TempDir(), "j")
			if err := os.WriteFile(other, []byte(journal), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(other, filepath.Join(work, "state.jsonl")); err != nil {
				t.Skipf("no hard links: %v", err)
			}
		}, errclass.HostPreparationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			work := filepath.Join(root, "var/lib/machineadm")
			if err := os.MkdirAll(work, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, work)
			out, err := runSession(Options{Command: Bootstrap, SpecFile: specFile, Root: root, ReportRoot: root, WorkDir: work})
			if ExitCode(err) != ExitFailed {
				t.Fatalf("exit %d (%v), want 1\n%s", ExitCode(err), err, out)
			}
			if _, err := os.Stat(filepath.Join(root, report.DefaultSentinel)); err == nil {
				t.Error("the success sentinel was written")
			}
			data, err := os.ReadFile(filepath.Join(root, report.DefaultPath))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := report.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != report.ResultFailed || rep.ErrorClass != tc.class || rep.Hint == "" {
				t.Errorf("report: %s %s hint %q; want Failed %s with a hint", rep.Result, rep.ErrorClass, rep.Hint, tc.class)
			}
			if strings.Contains(out, "already bootstrapped") {
				t.Errorf("console claims the host is bootstrapped:\n%s", out)
			}
		})
	}
}
