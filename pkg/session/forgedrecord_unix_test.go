//go:build unix

package session

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// An applied-spec record that group or others may write (or another user
// owns), which upgrade refuses to plan from, saying an upgrade applied
// this very spec, yields neither Succeeded nor the success sentinel on a
// host that shows nothing of it: the bootstrap is refused (exit code 2)
// naming the record. Read without the owner and mode check
// (ReadRecordAnyOwner), such a record, which anyone who may write it
// can forge, made the bootstrap report every phase Unchanged, Succeeded,
// and write the sentinel, without a look at the host. A bootstrap of the
// spec before the upgrade (its journal finished) is refused too: it
// neither trusts the record nor undoes the upgrade it may tell of.
func TestForgedRecordDoesNotMakeABlankHostSucceed(t *testing.T) {
	dir := t.TempDir()
	doc := []byte(testspec.MinimalWorker)
	specFile := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(specFile, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := spec.Load(doc, "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(doc)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	key, err := upgrade.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ recorded, journal string }{
		"this spec, blank host":   {recorded: digest},
		"after an upgrade, rerun": {recorded: "sha256:" + strings.Repeat("ef", 32), journal: digest},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			work := filepath.Join(root, "var/lib/machineadm")
			r, err := upgrade.NewRecord(l.Config, tc.recorded, "upgrade", "test", key, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Write(work); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(work, upgrade.RecordFile), 0o666); err != nil {
				t.Fatal(err)
			}
			if tc.journal != "" {
				j := `{"specDigest":"` + tc.journal + `"}` + "\n" + `{"finishedAt":"2026-01-01T00:00:00Z"}` + "\n"
				if err := os.WriteFile(filepath.Join(work, "state.jsonl"), []byte(j), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, err := runSession(Options{Command: Bootstrap, SpecFile: specFile, Root: root, ReportRoot: root, WorkDir: work})
			if ExitCode(err) != ExitBadInput || !strings.Contains(err.Error(), upgrade.RecordFile) || !strings.Contains(err.Error(), "0666") {
				t.Errorf("exit %d (%v), want 2 naming the record and its mode\n%s", ExitCode(err), err, out)
			}
			if _, err := os.Stat(filepath.Join(root, report.DefaultSentinel)); err == nil {
				t.Error("the success sentinel was written")
			}
			if data, err := os.ReadFile(filepath.Join(root, report.DefaultPath)); err != nil {
				t.Error(err)
			} else if rep, err := report.Decode(data); err != nil || rep.Result == report.ResultSucceeded {
				t.Errorf("report: %v %+v", err, rep)
			}
		})
	}
}

// TestUpgradeOfARecordOthersMayWriteSaysToGiveItBack: an upgrade refused
// for the record's owner or mode alone (exit code 2) says to give it back
// to root with mode 0600 once its spec is checked, not only to remove it
// and bootstrap again: removing it loses the spec the node runs, and a
// bootstrap of the spec an upgrade has since changed starts afresh. A
// record refused for its content keeps the remove-and-record hint.
func TestUpgradeOfARecordOthersMayWriteSaysToGiveItBack(t *testing.T) {
	l, err := spec.Load([]byte(testspec.MinimalWorker), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	key, err := upgrade.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	r, err := upgrade.NewRecord(l.Config, "sha256:"+strings.Repeat("ab", 32), "bootstrap", "test", key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := r.Write(work); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(work, upgrade.RecordFile)
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	d := &phases.Data{Config: l.Config, WorkDir: work, Log: slog.New(slog.DiscardHandler), Out: io.Discard}
	_, err = planUpgrade(Options{}, d, work)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "chmod 0600") || !strings.Contains(hintOf(err), "chown root:root") {
		t.Errorf("a record of mode 0666: %v (hint %q); want a usage error whose message and hint say to give it back to root, mode 0600", err, hintOf(err))
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"kind":"nothing"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = planUpgrade(Options{}, d, work)
	if !errors.As(err, &ue) || strings.Contains(err.Error(), "chmod 0600") || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a record that is not one: %v; want the remove-and-record hint", err)
	}
}

func hintOf(err error) string {
	_, hint := errclass.Of(err)
	return hint
}
