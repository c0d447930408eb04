package run

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
)

var updateInitJoin = flag.Bool("update-initjoin", false, "rewrite the expected results of testdata/classify_initjoin.json with this Classify (run it on the Classify to compare against)")

// initJoinGolden is testdata/classify_initjoin.json: failures (an
// error's message, whether it wraps context.DeadlineExceeded, the
// phase's output) and, for each (class, hint) of an init or join phase,
// the class and hint Classify gave them.
type initJoinGolden struct {
	// Hints are the hints Classify gave, each once.
	Hints []string        `json:"hints"`
	Cases []initJoinInput `json:"cases"`
}

type initJoinInput struct {
	Msg      string   `json:"msg"`
	Deadline bool     `json:"deadline,omitempty"`
	Output   []string `json:"output,omitempty"`
	// Want is, by phaseKey, the class and an index into Hints.
	Want map[string]initJoinResult `json:"want"`
}

type initJoinResult struct {
	Class errclass.Class `json:"class"`
	Hint  int            `json:"hint"`
}

// goldenErr is an error with a given message that wraps
// context.DeadlineExceeded when deadline is set.
type goldenErr struct {
	msg      string
	deadline bool
}

func (e goldenErr) Error() string { return e.msg }

func (e goldenErr) Is(target error) bool { return e.deadline && target == context.DeadlineExceeded }

// phaseKey is what Classify reads of a phase other than its name.
func phaseKey(p Phase) string { return string(p.Class) + "|" + p.Hint }

// initJoinPhases are every row of init's and join's tables, their
// classes inherited, and a phase without a class.
func initJoinPhases() []Phase {
	all := []Phase{{Name: "no class"}}
	all = append(all, inherit(PhaseTable(machineadm.ActionInit))...)
	return append(all, inherit(PhaseTable(machineadm.ActionJoin))...)
}

// TestClassifyInitJoinUnchanged: init's and join's phases classify every
// failure in testdata/classify_initjoin.json as the Classify of baf4eb8
// did, before upgrade phases had message rules of their own (written by
// it with -update-initjoin). The failures are every one the package's
// tests gave Classify before and after the upgrade's rules, and one for
// each string of a message rule.
func TestClassifyInitJoinUnchanged(t *testing.T) {
	path := filepath.Join("testdata", "classify_initjoin.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g initJoinGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) == 0 {
		t.Fatal("no cases")
	}
	phases := initJoinPhases()
	if *updateInitJoin {
		g.Hints = nil
		index := map[string]int{}
		for i := range g.Cases {
			c := &g.Cases[i]
			c.Want = map[string]initJoinResult{}
			for _, p := range phases {
				class, hint := Classify(p, goldenErr{c.Msg, c.Deadline}, c.Output)
				n, ok := index[hint]
				if !ok {
					n = len(g.Hints)
					index[hint] = n
					g.Hints = append(g.Hints, hint)
				}
				c.Want[phaseKey(p)] = initJoinResult{class, n}
			}
		}
		// One hint and one case a line.
		var out bytes.Buffer
		for i, part := range []any{g.Hints, g.Cases} {
			out.WriteString([]string{"{\"hints\": [", "],\n\"cases\": ["}[i])
			for j := range reflect.ValueOf(part).Len() {
				b, err := json.Marshal(reflect.ValueOf(part).Index(j).Interface())
				if err != nil {
					t.Fatal(err)
				}
				if j > 0 {
					out.WriteString(",")
				}
				out.WriteString("\n")
				out.Write(b)
			}
		}
		out.WriteString("]}\n")
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		// Never a pass: a golden file rewritten by the code under test
		// proves nothing about it.
		t.Fatalf("rewrote %s with this Classify; run again without -update-initjoin (and rewrite it only with the Classify to compare against)", path)
	}
	for _, c := range g.Cases {
		for _, p := range phases {
			want, ok := c.Want[phaseKey(p)]
			if !ok {
				t.Fatalf("phase %s (class %q, hint %q) is not in %s: regenerate it with -update-initjoin on the Classify to compare against", p.Name, p.Class, p.Hint, path)
			}
			class, hint := Classify(p, goldenErr{c.Msg, c.Deadline}, c.Output)
			if class != want.Class || hint != g.Hints[want.Hint] {
				t.Errorf("%s: %q (output %q): class %s, hint %q; was %s, %q", p.Name, c.Msg, c.Output, class, hint, want.Class, g.Hints[want.Hint])
			}
		}
	}
}
