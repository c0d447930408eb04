//go:build !windows

package phases

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testfifo"
)

// TestStateBadFiles: whatever is found in the state file's place, a run
// of fakeWorkflow (leaves a, b, c; spec sha256:aa) skips only the leaves
// that valid records before the first bad line name, never blocks or
// reads without bound, and leaves a journal that says the run finished.
// A legacy state.json claiming the spec finished sits beside every
// unreadable journal: it is older than the journal and must not be read.
func TestStateBadFiles(t *testing.T) {
	const (
		hdr      = `{"specDigest":"sha256:aa"}` + "\n"
		finished = `{"finishedAt":"2026-01-01T00:00:00Z"}` + "\n"
	)
	rec := func(names ...string) string {
		var b strings.Builder
		for _, n := range names {
			b.WriteString(`{"completed":"` + n + `"}` + "\n")
		}
		return b.String()
	}
	write := func(content string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, stateFile), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	legacyFinished := func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, legacyStateFile), []byte(`{"specDigest":"sha256:aa","completed":["a","b","c"],"finishedAt":"2026-01-01T00:00:00Z"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			legacyFinished(t, dir)
			if err := os.Symlink(target, filepath.Join(dir, stateFile)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name  string
		plant func(t *testing.T, dir string)
		// ran lists the leaves that must run.
		ran string
	}{
		{"garbage in the middle", write(hdr + rec("a") + "garbage\n" + rec("b") + finished), "bc"},
		{"zeros before finishedAt", write(hdr + rec("a", "b", "c") + "\x00\x00\x00\n" + finished), ""},
		{"CRLF line ends", write(strings.ReplaceAll(hdr+rec("a"), "\n", "\r\n")), "bc"},
		{"duplicate names", write(hdr + rec("a", "a", "b")), "c"},
		{"unknown names", write(hdr + rec("zz", "a", "a/b")), "bc"},
		{"another header after a line", write(hdr + rec("a") + `{"specDigest":"sha256:bb"}` + "\n" + rec("b")), "bc"},
		{"another spec", write(`{"specDigest":"sha256:bb"}` + "\n" + rec("a", "b", "c") + finished), "abc"},
		{"no header", write(rec("a", "b") + finished), "abc"},
		{"empty header", write(`{}` + "\n" + rec("a")), "abc"},
		{"null lines", write("null\n" + rec("a")), "abc"},
		// What a --only run appends after a finished one: still finished.
		{"finishedAt before completed", write(hdr + finished + rec("a")), ""},
		{"huge", func(t *testing.T, dir string) {
			legacyFinished(t, dir)
			p := filepath.Join(dir, stateFile)
			write(hdr+rec("a", "b", "c")+finished)(t, dir)
			// 300 MiB, sparse: bounded means it is never read.
			if err := os.Truncate(p, 300<<20); err != nil {
				t.Fatal(err)
			}
		}, "abc"},
		{"FIFO", func(t *testing.T, dir string) {
			legacyFinished(t, dir)
			testfifo.Make(t, filepath.Join(dir, stateFile))
		}, "abc"},
		{"link to /dev/zero", link("/dev/zero"), "abc"},
		{"link out of the work directory", func(t *testing.T, dir string) {
			outside := filepath.Join(t.TempDir(), "journal")
			if err := os.WriteFile(outside, []byte(hdr+rec("a", "b", "c")+finished), 0o600); err != nil {
				t.Fatal(err)
			}
			link(outside)(t, dir)
		}, "abc"},
		{"link to another file of the work directory", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "other.jsonl"), []byte(hdr+rec("a", "b", "c")+finished), 0o600); err != nil {
				t.Fatal(err)
			}
			link("/other.jsonl")(t, dir)
		}, "abc"},
		{"legacy file a link", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "old.json"), []byte(`{"specDigest":"sha256:aa","completed":["a","b","c"],"finishedAt":"x"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/old.json", filepath.Join(dir, legacyStateFile)); err != nil {
				t.Fatal(err)
			}
		}, "abc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := testData(t)
			tc.plant(t, d.WorkDir)
			// Files the plant made besides the state, to check they keep
			// their bytes.
			keep := map[string][]byte{}
			for _, n := range []string{"other.jsonl", "old.json"} {
				if b, err := os.ReadFile(filepath.Join(d.WorkDir, n)); err == nil {
					keep[n] = b
				}
			}
			runs := map[string]int{}
			fail := false
			if _, err := fakeWorkflow(&fail, runs).Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, leaf := range []string{"a", "b", "c"} {
				if want := strings.Count(tc.ran, leaf); runs[leaf] != want {
					t.Errorf("leaf %s ran %d times, want %d (runs %v)", leaf, runs[leaf], want, runs)
				}
			}
			fi, err := os.Lstat(filepath.Join(d.WorkDir, stateFile))
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("the state file after the run: %v, %v; want a regular file", fi, err)
			}
			st := loadState(d)
			if !st.completedRun("sha256:aa") || !st.journal {
				t.Errorf("state after the run %+v: want a finished journal", st)
			}
			for n, b := range keep {
				if after, _ := os.ReadFile(filepath.Join(d.WorkDir, n)); string(after) != string(b) {
					t.Errorf("%s changed through the link: %q", n, after)
				}
			}
		})
	}
}

// TestStateDirectoryInPlace: a directory where the journal belongs makes
// every leaf run (nothing can be recorded, which only warns), not a
// failure or a skip.
func TestStateDirectoryInPlace(t *testing.T) {
	d := testData(t)
	if err := os.MkdirAll(filepath.Join(d.WorkDir, stateFile, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		runs := map[string]int{}
		fail := false
		if _, err := fakeWorkflow(&fail, runs).Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if runs["a"] != 1 || runs["b"] != 1 || runs["c"] != 1 {
			t.Errorf("runs %v, want every leaf once", runs)
		}
	}
}

// TestStateOnlyRunKeepsJournal: `bootstrap phase NAME` (RunOptions.Only)
// neither consults nor completes the state, as its help says: it records
// no leaf (a later full run would skip it: a preflight run alone days
// earlier would stand for the bootstrap's), and run with another spec it
// does not replace a finished journal (whose loss would rerun preflight
// on a bootstrapped host).
func TestStateOnlyRunKeepsJournal(t *testing.T) {
	d := testData(t)
	runs := map[string]int{}
	fail := false
	if _, err := fakeWorkflow(&fail, runs).Run(context.Background(), d, &recordObs{}, RunOptions{Only: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(d.WorkDir, stateFile)); err == nil {
		t.Errorf("a run of one phase wrote the state file: %q", readJournal(t, d))
	}
	runs = map[string]int{}
	if _, err := fakeWorkflow(&fail, runs).Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if runs["a"] != 1 || runs["b"] != 1 || runs["c"] != 1 {
		t.Errorf("full run after a run of b alone: runs %v, want every leaf", runs)
	}
	before := readJournal(t, d)
	other := testData(t)
	other.WorkDir, other.SpecDigest = d.WorkDir, "sha256:bb"
	if _, err := fakeWorkflow(&fail, map[string]int{}).Run(context.Background(), other, &recordObs{}, RunOptions{Only: "c"}); err != nil {
		t.Fatal(err)
	}
	if after := readJournal(t, d); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("a run of one phase of another spec changed the journal:\n%q\nwas\n%q", after, before)
	}
}
