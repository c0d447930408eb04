package phases

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

type recordObs struct{ events []string }

func (r *recordObs) PhaseStarted(name string) { r.events = append(r.events, "start "+name) }
func (r *recordObs) PhaseFinished(name string, s Status, _ Result, _ error) {
	r.events = append(r.events, string(s)+" "+name)
}

func testData(t *testing.T) *Data {
	return &Data{SpecDigest: "sha256:aa", WorkDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Out: io.Discard}
}

// fakeWorkflow's phase "b" fails while *failB is true; runs counts calls.
func fakeWorkflow(failB *bool, runs map[string]int) *Workflow {
	mk := func(name string, changed bool) Phase {
		return Phase{Name: name, Run: func(ctx context.Context, d *Data) (Result, error) {
			runs[name]++
			if name == "b" && *failB {
				return Result{}, errors.New("b broke")
			}
			return Result{Changed: changed}, nil
		}}
	}
	return &Workflow{State: true, Phases: []Phase{mk("a", true), mk("b", true), mk("c", false)}}
}

func TestWorkflowResumeAndNoOp(t *testing.T) {
	d := testData(t)
	runs := map[string]int{}
	fail := true
	w := fakeWorkflow(&fail, runs)

	obs := &recordObs{}
	failed, err := w.Run(context.Background(), d, obs, RunOptions{})
	if failed != "b" || err == nil {
		t.Fatalf("first run: failed=%q err=%v", failed, err)
	}
	want := []string{"start a", "Succeeded a", "start b", "Failed b"}
	if !reflect.DeepEqual(obs.events, want) {
		t.Errorf("first run events %v, want %v", obs.events, want)
	}

	// After the crash/failure the run resumes at b.
	fail = false
	obs = &recordObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	want = []string{"Skipped a", "start b", "Succeeded b", "start c", "Unchanged c"}
	if !reflect.DeepEqual(obs.events, want) {
		t.Errorf("resume events %v, want %v", obs.events, want)
	}

	// After success, a re-run is a no-op.
	obs = &recordObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	want = []string{"Unchanged a", "Unchanged b", "Unchanged c"}
	if !reflect.DeepEqual(obs.events, want) {
		t.Errorf("re-run events %v, want %v", obs.events, want)
	}
	if runs["a"] != 1 || runs["b"] != 2 || runs["c"] != 1 {
		t.Errorf("phase runs %v", runs)
	}

	// A different spec starts over.
	d.SpecDigest = "sha256:bb"
	obs = &recordObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if runs["a"] != 2 {
		t.Errorf("new spec did not rerun a: %v", runs)
	}
	if fi, err := os.Stat(filepath.Join(d.WorkDir, stateFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file: %v %v", fi, err)
	}
}

func TestWorkflowSkipAndOnly(t *testing.T) {
	d := testData(t)
	runs := map[string]int{}
	fail := false
	w := fakeWorkflow(&fail, runs)
	obs := &recordObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{Skip: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"start a", "Succeeded a", "Skipped b", "start c", "Unchanged c"}
	if !reflect.DeepEqual(obs.events, want) {
		t.Errorf("skip events %v, want %v", obs.events, want)
	}
	// The run left b out, so it is not finished: the same skips change
	// nothing, and a run without them runs b alone, then finishes.
	obs = &recordObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{Skip: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Skipped a", "Skipped b", "Skipped c"}; !reflect.DeepEqual(obs.events, want) || runs["a"] != 1 || runs["c"] != 1 {
		t.Errorf("rerun with the same skips: events %v, runs %v", obs.events, runs)
	}
	obs = &recordObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Skipped a", "start b", "Succeeded b", "Skipped c"}; !reflect.DeepEqual(obs.events, want) || runs["b"] != 1 {
		t.Errorf("run without the skips: events %v, runs %v", obs.events, runs)
	}
	obs = &recordObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Unchanged a", "Unchanged b", "Unchanged c"}; !reflect.DeepEqual(obs.events, want) {
		t.Errorf("run after the finished one: events %v", obs.events)
	}
	obs = &recordObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{Only: "c"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"start c", "Unchanged c"}; !reflect.DeepEqual(obs.events, want) {
		t.Errorf("only events %v, want %v", obs.events, want)
	}
	if err := w.CheckNames([]string{"a", "zz"}); err == nil {
		t.Error("unknown phase accepted")
	}
}

func TestWorkflowDryRunKeepsNoState(t *testing.T) {
	d := testData(t)
	d.DryRun = true
	runs := map[string]int{}
	fail := false
	w := fakeWorkflow(&fail, runs)
	for range 2 {
		if _, err := w.Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if runs["a"] != 2 {
		t.Errorf("dry runs should not be remembered: %v", runs)
	}
	if _, err := os.Stat(filepath.Join(d.WorkDir, stateFile)); err == nil {
		t.Error("dry run wrote a state file")
	}
}

// resumeObs is a ResumeObserver recording Resumed as an event.
type resumeObs struct{ recordObs }

func (r *resumeObs) Resumed(name string, completed int) {
	r.events = append(r.events, "resumed "+name+" after "+string(rune('0'+completed)))
}

func TestWorkflowTellsWhereItResumes(t *testing.T) {
	d := testData(t)
	runs := map[string]int{}
	fail := true
	w := fakeWorkflow(&fail, runs)

	// A run from the first phase resumes nowhere.
	obs := &resumeObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err == nil {
		t.Fatal("first run succeeded")
	}
	want := []string{"start a", "Succeeded a", "start b", "Failed b"}
	if !reflect.DeepEqual(obs.events, want) {
		t.Errorf("first run events %v, want %v", obs.events, want)
	}

	// The run after it is told once, before the first leaf it runs.
	fail = false
	obs = &resumeObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	want = []string{"Skipped a", "resumed b after 1", "start b", "Succeeded b", "start c", "Unchanged c"}
	if !reflect.DeepEqual(obs.events, want) {
		t.Errorf("resumed run events %v, want %v", obs.events, want)
	}

	// A run after the finished one is a no-op, not a resumption.
	obs = &resumeObs{}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, e := range obs.events {
		if len(e) > 7 && e[:7] == "resumed" {
			t.Errorf("no-op run said %q", e)
		}
	}
}
