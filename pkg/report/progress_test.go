package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/redact"
)

// readReportFile decodes the report at path strictly, as `machineadm
// report` does.
func readReportFile(t *testing.T, path string) *BootstrapReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(b)
	if err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return r
}

// A run killed where no handler runs (SIGKILL) leaves the provisional
// report: never the earlier run's Succeeded report, never its sentinel.
func TestBeginLeavesATrueRecordOfAnUnfinishedRun(t *testing.T) {
	root := t.TempDir()
	file := &FileWriter{Root: root}
	sentinel := &SentinelWriter{Root: root}
	writers := []Writer{file, sentinel, &memWriter{name: "mem"}}
	reportFile := filepath.Join(root, DefaultPath)
	sentinelFile := filepath.Join(root, DefaultSentinel)

	// An earlier, successful run.
	first := NewRecorder(Meta{Command: "bootstrap"}, []Writer{&FileWriter{Root: root}, &SentinelWriter{Root: root}}, nil, nil)
	first.PhaseStarted("preflight")
	first.PhaseFinished("preflight", PhaseSucceeded, "")
	if err := first.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sentinelFile); err != nil {
		t.Fatalf("first run's sentinel: %v", err)
	}

	// The next run begins: the success claim goes at once.
	rec := NewRecorder(Meta{Command: "bootstrap"}, writers, nil, nil)
	rec.Plan("preflight", "certs", "certs/ca", "certs/apiserver", "addon")
	if err := rec.Begin(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sentinelFile); !os.IsNotExist(err) {
		t.Errorf("sentinel of the earlier run still there after Begin: %v", err)
	}
	r := readReportFile(t, reportFile)
	if r.Result != ResultFailed || r.ErrorClass != errclass.Interrupted || r.FailedPhase != "" || !strings.Contains(r.Error, "unfinished run") {
		t.Errorf("provisional report at Begin: result %s class %s phase %q error %q", r.Result, r.ErrorClass, r.FailedPhase, r.Error)
	}
	if prev := readReportFile(t, filepath.Join(root, PreviousPath(DefaultPath))); prev.Result != ResultSucceeded {
		t.Errorf("previous report is %s, want the earlier run's Succeeded", prev.Result)
	}

	// A top-level phase starting rewrites it; a sub-phase does not.
	rec.PhaseStarted("preflight")
	rec.PhaseFinished("preflight", PhaseSucceeded, "")
	rec.PhaseStarted("certs")
	r = readReportFile(t, reportFile)
	if r.FailedPhase != "certs" || len(r.Phases) != 2 || r.Phases[0].Status != PhaseSucceeded || r.Phases[1].Status != PhaseFailed {
		t.Errorf("provisional report in certs: phase %q phases %+v", r.FailedPhase, r.Phases)
	}
	rec.PhaseStarted("certs/ca")
	if r2 := readReportFile(t, reportFile); r2.FailedPhase != "certs" {
		t.Errorf("a sub-phase rewrote the provisional report: failedPhase %q", r2.FailedPhase)
	}
	// Where the run resumed is in the provisional report at once.
	rec.Resumed("certs/ca")
	if r2 := readReportFile(t, reportFile); r2.ResumedFrom != "certs/ca" || r2.FailedPhase != "certs/ca" {
		t.Errorf("after Resumed: resumedFrom %q failedPhase %q", r2.ResumedFrom, r2.FailedPhase)
	}
	if _, err := os.Stat(sentinelFile); !os.IsNotExist(err) {
		t.Errorf("sentinel written during the run: %v", err)
	}
	// The writers that keep no progress saw nothing yet.
	if n := len(writers[2].(*memWriter).reports); n != 0 {
		t.Errorf("plain writer got %d reports before the end", n)
	}

	// The final report replaces the provisional one, which is not kept as
	// the previous report.
	rec.PhaseFinished("certs/ca", PhaseSucceeded, "")
	rec.PhaseStarted("certs/apiserver")
	rec.PhaseFinished("certs/apiserver", PhaseSucceeded, "")
	rec.PhaseFinished("certs", PhaseSucceeded, "")
	rec.PhaseStarted("addon")
	rec.PhaseFinished("addon", PhaseSucceeded, "")
	if err := rec.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = readReportFile(t, reportFile)
	if r.Result != ResultSucceeded || r.ResumedFrom != "certs/ca" || r.ErrorClass != "" {
		t.Errorf("final report: result %s resumedFrom %q class %s", r.Result, r.ResumedFrom, r.ErrorClass)
	}
	if prev := readReportFile(t, filepath.Join(root, PreviousPath(DefaultPath))); prev.Result != ResultSucceeded || prev.StartTime.After(r.StartTime) || len(prev.Phases) != 1 {
		t.Errorf("previous report after the final write is not the earlier run's: %s %d phases", prev.Result, len(prev.Phases))
	}
	if _, err := os.Stat(sentinelFile); err != nil {
		t.Errorf("sentinel after success: %v", err)
	}
	if got := Summary(r, OneScreen(DefaultPath)); !strings.Contains(got, "resumed at certs/ca") {
		t.Errorf("summary does not say where the run resumed:\n%s", got)
	}

	// Progress after the end changes nothing.
	rec.PhaseStarted("late")
	rec.Resumed("late")
	if r2 := readReportFile(t, reportFile); r2.Result != ResultSucceeded || r2.ResumedFrom != "certs/ca" {
		t.Errorf("progress after Finish rewrote the report: %s %q", r2.Result, r2.ResumedFrom)
	}
}

// The provisional report is redacted like the final one, and a signal's
// report replaces it.
func TestProvisionalReportRedactedAndReplacedByInterrupted(t *testing.T) {
	root := t.TempDir()
	red := redact.New("abcdef.0123456789abcdef")
	rec := NewRecorder(Meta{Command: "bootstrap", Machine: Machine{SpecName: "abcdef.0123456789abcdef"}}, []Writer{&FileWriter{Root: root}}, red, nil)
	if err := rec.Begin(); err != nil {
		t.Fatal(err)
	}
	rec.AppendOutput("joining with abcdef.0123456789abcdef")
	rec.PhaseStarted("kubelet-start")
	raw, err := os.ReadFile(filepath.Join(root, DefaultPath))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "0123456789abcdef") {
		t.Errorf("provisional report holds the token:\n%s", raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rec.Interrupted(ctx, os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := readReportFile(t, filepath.Join(root, DefaultPath))
	if r.ErrorClass != errclass.Interrupted || !strings.Contains(r.Error, "interrupted by signal") || r.FailedPhase != "kubelet-start" {
		t.Errorf("after the signal: class %s error %q phase %q", r.ErrorClass, r.Error, r.FailedPhase)
	}
	if _, err := os.Stat(filepath.Join(root, PreviousPath(DefaultPath))); !os.IsNotExist(err) {
		t.Errorf("the provisional report was kept as the previous one: %v", err)
	}
}

// BenchmarkProgressUpdate measures one provisional report update (a
// top-level phase starting) against the durable write the final report
// costs, on the file system of the test's temporary directory.
func BenchmarkProgressUpdate(b *testing.B) {
	for _, bc := range []struct {
		name  string
		final bool
	}{{"update", false}, {"durable", true}} {
		b.Run(bc.name, func(b *testing.B) {
			root := b.TempDir()
			w := &FileWriter{Root: root}
			rec := NewRecorder(Meta{Command: "bootstrap"}, []Writer{w}, nil, nil)
			for i := range 40 {
				name := fmt.Sprintf("phase-%d", i)
				rec.PhaseStarted(name)
				rec.PhaseFinished(name, PhaseSucceeded, "wrote /etc/something")
			}
			if err := rec.Begin(); err != nil {
				b.Fatal(err)
			}
			p := rec.provisionalLocked()
			b.ResetTimer()
			for range b.N {
				var err error
				if bc.final {
					err = w.write(context.Background(), &p, false, true)
				} else {
					err = w.WriteProgress(&p, false)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
