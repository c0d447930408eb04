package phases

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/spec"
)

func readJournal(t *testing.T, d *Data) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.WorkDir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestStateJournalAppends: each completed leaf appends one line to the
// same file (no rewrite, so no rename per leaf), a new spec rewrites it,
// and a finished run ends with finishedAt.
func TestStateJournalAppends(t *testing.T) {
	d := testData(t)
	var seen []os.FileInfo
	ino := func() {
		fi, err := os.Stat(filepath.Join(d.WorkDir, stateFile))
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, fi)
	}
	mk := func(name string, durable bool) Phase {
		return Phase{Name: name, Durable: durable, Run: func(context.Context, *Data) (Result, error) {
			if name != "a" {
				ino() // the journal as the leaves before this one left it
			}
			return Result{}, nil
		}}
	}
	w := &Workflow{State: true, Phases: []Phase{mk("a", false), mk("preflight", true), {Name: "p", Phases: []Phase{mk("x", false), mk("y", false)}}}}
	if _, err := w.Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	ino()
	got := readJournal(t, d)
	want := []string{`{"specDigest":"sha256:aa"}`, `{"completed":"a"}`, `{"completed":"preflight"}`, `{"completed":"p/x"}`, `{"completed":"p/y"}`}
	if len(got) != len(want)+1 || !reflect.DeepEqual(got[:len(want)], want) || !strings.HasPrefix(got[len(want)], `{"finishedAt":"`) {
		t.Fatalf("journal:\n%s\nwant %s then finishedAt", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, fi := range seen[1:] {
		if !os.SameFile(fi, seen[0]) {
			t.Error("the journal was replaced between leaves: records must be appended")
			break
		}
	}
	if fi, _ := os.Stat(filepath.Join(d.WorkDir, stateFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", fi.Mode().Perm())
	}
	st := loadState(d)
	if !st.completedRun("sha256:aa") || !st.journal || len(st.Completed) != 4 {
		t.Errorf("loaded %+v", st)
	}

	// Another spec starts a new journal.
	d.SpecDigest = "sha256:bb"
	if _, err := w.Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readJournal(t, d); got[0] != `{"specDigest":"sha256:bb"}` || len(got) != 6 {
		t.Errorf("journal of the new spec:\n%s", strings.Join(got, "\n"))
	}
}

// TestStateTornTail: a journal whose last line a power loss tore (or
// filled with zeros) keeps its valid records; the next record rewrites
// the file without the torn part, so later records are never hidden
// behind it.
func TestStateTornTail(t *testing.T) {
	for name, tail := range map[string]string{
		"torn line":    `{"compl`,
		"zeros":        "\x00\x00\x00\x00\n",
		"wrong record": `{"specDigest":"sha256:aa"}` + "\n",
		"both fields":  `{"completed":"b","finishedAt":"x"}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			d := testData(t)
			p := filepath.Join(d.WorkDir, stateFile)
			if err := os.WriteFile(p, []byte(`{"specDigest":"sha256:aa"}`+"\n"+`{"completed":"a"}`+"\n"+tail), 0o600); err != nil {
				t.Fatal(err)
			}
			st := loadState(d)
			if st.SpecDigest != "sha256:aa" || !reflect.DeepEqual(st.Completed, []string{"a"}) || st.journal {
				t.Fatalf("loaded %+v; want a completed and a rewrite pending", st)
			}
			runs := map[string]int{}
			fail := false
			if _, err := fakeWorkflow(&fail, runs).Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
				t.Fatal(err)
			}
			if runs["a"] != 0 || runs["b"] != 1 {
				t.Errorf("runs %v: a was completed, b was not", runs)
			}
			got := readJournal(t, d)
			want := []string{`{"specDigest":"sha256:aa"}`, `{"completed":"a"}`, `{"completed":"b"}`, `{"completed":"c"}`}
			if len(got) != 5 || !reflect.DeepEqual(got[:4], want) || !strings.HasPrefix(got[4], `{"finishedAt":"`) {
				t.Errorf("journal after the rewrite:\n%q", got)
			}
		})
	}
}

// TestStateLegacy: the single JSON document of earlier versions is read
// (a host they bootstrapped stays bootstrapped) and replaced by the
// journal at the next record.
func TestStateLegacy(t *testing.T) {
	d := testData(t)
	legacy := filepath.Join(d.WorkDir, legacyStateFile)
	if err := os.WriteFile(legacy, []byte(`{"specDigest":"sha256:aa","completed":["a"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	fail := false
	obs := &recordObs{}
	if _, err := fakeWorkflow(&fail, runs).Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if runs["a"] != 0 || obs.events[0] != "Skipped a" {
		t.Errorf("legacy state not used: runs %v events %v", runs, obs.events)
	}
	if _, err := os.Stat(legacy); err == nil {
		t.Error("legacy state file left beside the journal")
	}
	if got := readJournal(t, d); len(got) != 5 || got[1] != `{"completed":"a"}` {
		t.Errorf("journal:\n%q", got)
	}
	// Finished in the legacy format: a no-op.
	d2 := testData(t)
	if err := os.WriteFile(filepath.Join(d2.WorkDir, legacyStateFile), []byte(`{"specDigest":"sha256:aa","completed":["a","b","c"],"finishedAt":"2026-01-01T00:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	runs = map[string]int{}
	if _, err := fakeWorkflow(&fail, runs).Run(context.Background(), d2, &recordObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 0 {
		t.Errorf("a finished legacy run ran again: %v", runs)
	}
}

// TestKubeadmPreflightIsDurable: the phases built from kubeadm's table
// carry RefusesRerun as Durable: preflight, and nothing else.
func TestKubeadmPreflightIsDurable(t *testing.T) {
	l, err := spec.Load([]byte(testspec.MinimalWorker), "worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	init := *l.Config
	init.Spec.Action = machineadm.ActionInit
	for cfg, c := range map[string]*machineadm.MachineBootstrapConfig{"join": l.Config, "init": &init} {
		w := Bootstrap(c)
		var durable []string
		for _, n := range w.Nodes() {
			if n.Phase.Durable {
				durable = append(durable, n.Name)
			}
		}
		if !reflect.DeepEqual(durable, []string{"preflight"}) {
			t.Errorf("%s: durable leaves %v, want [preflight]", cfg, durable)
		}
	}
}

// benchLeaves is the number of leaves of a control-plane init.
const benchLeaves = 31

// BenchmarkStateJournal records a control-plane init's leaves the way
// the workflow does: one appended line each, preflight's fsynced, then the
// durable end of the run.
func BenchmarkStateJournal(b *testing.B) {
	for b.Loop() {
		d := &Data{SpecDigest: "sha256:aa", WorkDir: b.TempDir()}
		st := &state{}
		for i := range benchLeaves {
			if err := st.markPhase(d, fmt.Sprintf("phase/leaf-%02d", i), i == 3); err != nil {
				b.Fatal(err)
			}
		}
		if err := st.markDone(d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStateRewriteEachLeaf is the scheme the journal replaced: the
// whole state rewritten after each leaf through a temporary file, fsync,
// rename and directory fsync.
func BenchmarkStateRewriteEachLeaf(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		var l legacyState
		for i := range benchLeaves + 1 {
			l.Completed = append(l.Completed, fmt.Sprintf("phase/leaf-%02d", i))
			data, err := json.MarshalIndent(l, "", "  ")
			if err != nil {
				b.Fatal(err)
			}
			if err := atomicfile.WriteFile(filepath.Join(dir, legacyStateFile), data, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
}
