package session

import (
	"fmt"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/compliance"
	"github.com/machineadm/machineadm/pkg/host/evidence"
	"io"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/host/sysctl"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/report"
)

// console observes a workflow run: it records every phase in the outcome
// report and prints one line a phase, the same for every command:
//
//	[bootstrap] certs/apiserver: changed (14ms)
//	[prepare] containerd: would change (3ms)
//	  would rewrite /etc/containerd/config.toml (0644, 0:0, 709 bytes)
//	[prepare] sysctl: skipped (--skip-phases)
//	[prepare] files: unchanged
//
// followed by the change lines of host phases, indented, and at the end
// "[CMD] done: N of M phases changed" (phases that only check, such as
// inputs-check and host-check, and parents are not counted).
type console struct {
	rec     *report.Recorder
	out     io.Writer
	prefix  string
	dryRun  bool
	start   map[string]time.Time
	leaf    map[string]bool
	counted map[string]bool
	ran     int
	changed int
}

func newConsole(rec *report.Recorder, out io.Writer, w *phases.Workflow, dryRun bool) *console {
	c := &console{rec: rec, out: out, prefix: "[" + w.Command + "] ", dryRun: dryRun,
		start: map[string]time.Time{}, leaf: map[string]bool{}, counted: map[string]bool{}}
	for _, n := range w.Nodes() {
		leaf := len(n.Phase.Phases) == 0
		c.leaf[n.Name] = leaf
		c.counted[n.Name] = leaf && !n.Phase.Check
	}
	return c
}

// PhaseStarted implements phases.Observer.
func (c *console) PhaseStarted(name string) {
	c.start[name] = time.Now()
	c.rec.PhaseStarted(name)
}

// Resumed implements phases.ResumeObserver: the report's resumedFrom and
// one console line.
func (c *console) Resumed(name string, completed int) {
	c.rec.Resumed(name)
	fmt.Fprintf(c.out, "%sresuming at %s: %d phases completed by an earlier run of this spec\n", c.prefix, name, completed)
}

// PhaseFinished implements phases.Observer.
func (c *console) PhaseFinished(name string, status phases.Status, res phases.Result, err error) {
	msg := res.Summary()
	if len(res.Sysctl) > 0 || len(res.Warnings) > 0 {
		c.rec.PhaseDetails(name, sysctlValues(res.Sysctl), res.Warnings)
	}
	if res.Evidence != nil {
		c.rec.Compliance(complianceSection(res.Evidence))
	}
	if res.NodeRegistered {
		c.rec.NodeRegistered()
	}
	if status == phases.StatusFailed {
		c.rec.Fail(name, err)
	} else {
		c.rec.PhaseFinished(name, report.PhaseStatus(status), msg)
	}
	line := c.prefix + name + ": " + c.word(status, msg)
	if t, ok := c.start[name]; ok && (status == phases.StatusSucceeded || status == phases.StatusFailed) {
		line += " (" + time.Since(t).Round(time.Millisecond).String() + ")"
	}
	fmt.Fprintln(c.out, line)
	for _, ch := range res.Changes {
		fmt.Fprintf(c.out, "  %s\n", ch)
	}
	if c.counted[name] && status != phases.StatusSkipped {
		c.ran++
		if status == phases.StatusSucceeded {
			c.changed++
		}
	}
}

// word says a status in a person's words.
func (c *console) word(s phases.Status, msg string) string {
	switch s {
	case phases.StatusSucceeded:
		if c.dryRun {
			return "would change"
		}
		return "changed"
	case phases.StatusUnchanged:
		if strings.HasPrefix(msg, "already bootstrapped") {
			return "unchanged (" + msg + ")"
		}
		return "unchanged"
	case phases.StatusSkipped:
		switch {
		case strings.Contains(msg, "--skip-phases"):
			return "skipped (--skip-phases)"
		case msg != "":
			return "skipped (" + msg + ")"
		}
		return "skipped"
	}
	return "failed"
}

// done prints the closing line of a run that finished.
func (c *console) done(ok bool) {
	if !ok {
		return
	}
	verb := "changed"
	if c.dryRun {
		verb = "would change"
	}
	fmt.Fprintf(c.out, "%sdone: %d of %d phases %s\n", c.prefix, c.changed, c.ran, verb)
}

// sysctlValues turns the sysctl step's values into the report's.
func sysctlValues(vs []sysctl.Value) []report.SysctlValue {
	var out []report.SysctlValue
	for _, v := range vs {
		rv := report.SysctlValue{Key: v.Key, Desired: v.Desired, Effective: v.Effective}
		if v.Err != nil {
			rv.ReadError = v.Err.Error()
		}
		if v.Boot != nil {
			rv.BootValue, rv.BootFile = v.Boot.Value, v.Boot.File
		}
		out = append(out, rv)
	}
	return out
}

// complianceSection turns the compliance phase's verdicts into the
// report's compliance section.
func complianceSection(e *phases.Evidence) *report.Compliance {
	c := &report.Compliance{Profile: string(e.Profile), Benchmark: compliance.Benchmark(e.Profile), DryRun: e.DryRun}
	for _, r := range e.Results {
		switch r.Verdict {
		case evidence.Pass:
			c.Counts.Pass++
		case evidence.Fail:
			c.Counts.Fail++
			if r.Waiver != "" {
				c.Counts.Waived++
			}
		case evidence.Warn:
			c.Counts.Warn++
		case evidence.NotApplicable:
			c.Counts.NotApplicable++
		case evidence.NotEvaluated:
			c.Counts.NotEvaluated++
		}
		c.Checks = append(c.Checks, report.ComplianceCheck{
			ID: r.Check.ID, Scope: string(r.Check.Scope), Automated: r.Check.Automated, Verdict: string(r.Verdict),
			Title: r.Check.Title, Detail: r.Detail, Waiver: r.Waiver,
		})
	}
	return c
}
