// Package phases is machineadm's one workflow engine: a tree of named
// phases, like kubeadm's (cmd/kubeadm/app/cmd/phases/workflow), that every
// command runs — bootstrap init, control-plane join, worker join, and
// `prepare`, which is the host group of the same tree run alone.
//
// A phase is named by its path in the tree ("certs/apiserver",
// "addon/kube-proxy"); --skip-phases takes a full name and skips that
// phase and everything below it; `bootstrap phase NAME` runs one phase (a
// parent runs its children). A parent's report entry spans its children
// and a failure names the leaf. Each phase declares the error class of its
// failures where it is defined, so a failure is classified once, when it
// happens. A state file (a journal in the work directory, see state) makes
// a re-run after success a no-op and a re-run after a crash resume at the
// first leaf that did not finish.
package phases

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/sysctl"
)

// Status is the outcome of one phase, as the outcome report shows it.
type Status string

// Phase statuses.
const (
	StatusSucceeded Status = "Succeeded"
	StatusFailed    Status = "Failed"
	StatusSkipped   Status = "Skipped"
	StatusUnchanged Status = "Unchanged"
)

// Result is what one phase did, or in a dry run would do.
type Result struct {
	// Changed says whether the phase changed (would change) the host.
	Changed bool
	// Changes are lines for a person ("wrote /etc/sysctl.d/90-machineadm.conf
	// (0644, 0:0, 42 bytes)"); never secret.
	Changes []string
	// Message is the one-line report message; empty: the first change
	// line and how many more there are.
	Message string
	// Sysctl is the sysctl host step's desired and effective values
	// (host.Result.Sysctl), recorded in the outcome report; also set when
	// the phase failed.
	Sysctl []sysctl.Value
	// Warnings are what the phase found wrong without failing, one line
	// each (host.Result.Warnings), recorded in the outcome report.
	Warnings []string
	// Evidence is the compliance/evidence phase's verdicts, recorded in the
	// outcome report's compliance section; also set when the phase failed.
	Evidence *Evidence
	// NodeRegistered says that after this phase the join's Node exists in
	// the cluster (set by the runner for a Phase.RegistersNode leaf).
	NodeRegistered bool
}

// Summary is the result's one-line report message.
func (r Result) Summary() string {
	if r.Message != "" {
		return r.Message
	}
	switch len(r.Changes) {
	case 0:
		return ""
	case 1:
		return r.Changes[0]
	}
	return fmt.Sprintf("%s (+%d more)", r.Changes[0], len(r.Changes)-1)
}

// Phase is one node of the workflow tree.
type Phase struct {
	// Name is the phase's own name; its full name, used by --skip-phases,
	// `bootstrap phase NAME` and the report, is its parents' names and its
	// own joined by "/". kubeadm's phases keep kubeadm's names.
	Name string
	// Short describes the phase in one line.
	Short string
	// Class is the error class of a failure whose error carries none
	// (errclass.Error); a phase without one takes its parent's, and a
	// top-level phase without one is Internal.
	Class errclass.Class
	// Hint is the hint for such a failure; empty: the class's default.
	Hint string
	// Check marks a phase that only reads and checks (inputs-check,
	// host-check): it never changes the host and is not counted in the
	// "N of M phases changed" line.
	Check bool
	// reconverge marks a leaf that converges when run again on a host
	// where it ran before (inputs-check and the host group): a finished
	// journal the host does not bear out (Workflow.Confirm) forgets it, so
	// that it runs again.
	reconverge bool
	// Durable makes the state file's record of this leaf survive a power
	// loss (fsync) before the next leaf starts. Set it on a leaf that
	// cannot run again once later leaves changed the host (kubeadm's
	// preflight, which refuses the files and ports they create); losing
	// any other leaf's record only reruns it. See state.
	Durable bool
	// RegistersNode marks the leaf after which a join's Node exists in the
	// cluster (kubeadm's kubelet-wait-bootstrap: the kubelet has its
	// credential and registers its Node). Once it succeeded, or an earlier
	// run of the spec completed it, a failure later in the run is reported
	// with the Node's name (Result.NodeRegistered), so an operator deletes
	// it before retrying. Not in a dry run.
	RegistersNode bool
	// Completes marks a leaf that completes the run only when no phase was
	// skipped (upgrade's record-spec): after a run with --skip-phases the
	// journal does not record it, so the run without the flag runs it
	// again, after the skipped phases.
	Completes bool
	// Run performs a leaf phase. Parents have no Run.
	Run func(ctx context.Context, d *Data) (Result, error)
	// Phases are the sub-phases, in order.
	Phases []Phase
}

// Workflow is a tree of phases run by one command.
type Workflow struct {
	// Command is the machineadm command that runs it, "bootstrap" or
	// "prepare"; it prefixes the console lines.
	Command string
	// Phases are the top-level phases, in order.
	Phases []Phase
	// State keeps a state file in the work directory: a run after
	// success is a no-op, a run after a crash resumes (bootstrap). Without
	// it every run checks the host afresh (prepare). A run with
	// RunOptions.Only (`bootstrap phase NAME`) neither reads nor writes it.
	State bool
	// Confirm, when set, looks at the host, read-only, before a journal
	// that says this spec's run finished is believed: nil when the host
	// shows the finished run. Otherwise the run does not report
	// Unchanged: it runs the leaves Unconfirmed says again, and records
	// success only when they succeed. Bootstrap sets it (confirmBootstrap).
	Confirm func(d *Data) *Unconfirmed
	// Done, when set, says why the run has nothing to do although the
	// state file does not say so ("" when it has): bootstrap with the
	// spec an upgrade applied since. Every phase is then reported
	// Unchanged with that message. Not for a run of one phase.
	Done func(d *Data) string
	// Absent, when set, says why name, which is not in the tree, is
	// missing (a kubeadm phase that machineadm never runs, or whose
	// condition does not hold for the spec); "" when it names no phase at
	// all. CheckNames puts it into its error.
	Absent func(name string) string
}

// Node is one phase of a workflow with its place in the tree.
type Node struct {
	// Name is the full name ("certs/apiserver").
	Name string
	// Depth is 0 for a top-level phase.
	Depth int
	// Phase is the phase itself.
	Phase *Phase
	// Class and Hint are the phase's own, or inherited from its parents.
	Class errclass.Class
	Hint  string
}

// Nodes returns every phase of the tree in the order it runs, parents
// before their children.
func (w *Workflow) Nodes() []Node {
	var out []Node
	var walk func(prefix string, depth int, ps []Phase, class errclass.Class, hint string)
	walk = func(prefix string, depth int, ps []Phase, class errclass.Class, hint string) {
		for i := range ps {
			p := &ps[i]
			c, h := class, hint
			if p.Class != "" {
				c, h = p.Class, p.Hint
			}
			out = append(out, Node{Name: prefix + p.Name, Depth: depth, Phase: p, Class: c, Hint: h})
			walk(prefix+p.Name+"/", depth+1, p.Phases, c, h)
		}
	}
	walk("", 0, w.Phases, errclass.Internal, "")
	return out
}

// Names returns the full names of every phase, in order.
func (w *Workflow) Names() []string {
	var out []string
	for _, n := range w.Nodes() {
		out = append(out, n.Name)
	}
	return out
}

// Leaves returns the full names of the phases that run (those without
// sub-phases), in order.
func (w *Workflow) Leaves() []string {
	var out []string
	for _, n := range w.Nodes() {
		if len(n.Phase.Phases) == 0 {
			out = append(out, n.Name)
		}
	}
	return out
}

// CheckNames returns an error naming any of names that is not the full
// name of a phase of the workflow: each quoted (an empty name is visible
// as ""), with why it is absent (Absent) or, for a sub-phase's short name
// ("kube-proxy"), the full names it may mean ("addon/kube-proxy").
func (w *Workflow) CheckNames(names []string) error {
	known := w.Names()
	var unknown, seen []string
	for _, n := range names {
		if slices.Contains(known, n) || slices.Contains(seen, n) {
			continue
		}
		seen = append(seen, n)
		desc := strconv.Quote(n)
		var why string
		if w.Absent != nil {
			why = w.Absent(n)
		}
		if why == "" && n != "" && !strings.Contains(n, "/") {
			var full []string
			for _, k := range known {
				if strings.HasSuffix(k, "/"+n) {
					full = append(full, strconv.Quote(k))
				}
			}
			if len(full) > 0 {
				why = "did you mean " + strings.Join(full, " or ") + "? sub-phases take their full name"
			}
		}
		if why != "" {
			desc += " (" + why + ")"
		}
		unknown = append(unknown, desc)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown phase(s) %s; phases of this spec: %s", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return nil
}

// Print writes the tree, one phase a line, children indented under their
// parents, each with its description.
func (w *Workflow) Print(out io.Writer) {
	for _, n := range w.Nodes() {
		name := strings.Repeat("  ", n.Depth) + n.Name
		fmt.Fprintf(out, "%-44s %s\n", name, n.Phase.Short)
	}
}

// Observer is told about each phase as it runs; the run session's
// recorder and console implement it.
type Observer interface {
	// PhaseStarted is called before a phase runs (a parent before its
	// first child).
	PhaseStarted(name string)
	// PhaseFinished is called after a phase ran or was skipped; err is set
	// for StatusFailed and carries the failure's class.
	PhaseFinished(name string, status Status, res Result, err error)
}

// ResumeObserver is an Observer that is also told where a run resumes:
// Resumed(name) is called once, before PhaseStarted(name), for the first
// leaf that runs after leaves skipped because an earlier, unfinished run
// of the same spec completed them (state file). Not called for a run that
// starts from the first phase, nor for a run after a finished one.
type ResumeObserver interface {
	Observer
	// Resumed says that the run resumes at leaf name after skipping
	// completed leaves (how many).
	Resumed(name string, completed int)
}

// RunOptions select what a run does.
type RunOptions struct {
	// Skip names phases not to run (full names); they and their children
	// are reported Skipped.
	Skip []string
	// Only, when set, runs just this phase (and its children):
	// `bootstrap phase NAME`. The others are not reported and the state
	// file is not consulted.
	Only string
}

// Skipped says whether the phase named name is skipped by opts: it or one
// of its parents is in Skip.
func (o RunOptions) Skipped(name string) bool {
	for _, s := range o.Skip {
		if name == s || strings.HasPrefix(name, s+"/") {
			return true
		}
	}
	return false
}

// selected says whether name runs under Only: it is Only, below it, or one
// of its parents (whose entry spans it).
func (o RunOptions) selected(name string) bool {
	return o.Only == "" || name == o.Only || strings.HasPrefix(name, o.Only+"/") || strings.HasPrefix(o.Only, name+"/")
}

// Run runs the workflow's phases in order, stopping at the first failure,
// and reports each one to obs. It returns the failing leaf's full name and
// its error, which carries its class (errclass.Error): the phase's own
// when the error had none. A run whose state file shows the same spec
// already bootstrapped reports every phase Unchanged and returns nil; a
// run after an interrupted one skips the leaves that completed. A run of
// one phase (opts.Only) keeps no state. A run that skipped phases
// (opts.Skip) records its leaves but not the run as finished, so a later
// run without the skips runs the skipped phases.
func (w *Workflow) Run(ctx context.Context, d *Data, obs Observer, opts RunOptions) (string, error) {
	d.opts, d.skipped = opts, nil
	defer d.releaseKubeadm()
	defer d.releaseHost()
	// A run of one phase (Only) neither consults nor completes the state:
	// a leaf it recorded would be skipped by a later full run, and its
	// spec, another, would replace a finished journal.
	useState := w.State && opts.Only == ""
	if w.Done != nil && opts.Only == "" {
		if why := w.Done(d); why != "" {
			d.finishedEarlier = true
			for _, n := range w.Nodes() {
				obs.PhaseFinished(n.Name, StatusUnchanged, Result{Message: why}, nil)
			}
			return "", nil
		}
	}
	st := &state{}
	if useState {
		st = loadState(d)
	}
	if opts.Only == "" && st.completedRun(d.SpecDigest) && w.Confirm != nil {
		if u := w.Confirm(d); u != nil {
			var rerun []string
			for _, n := range w.Nodes() {
				if n.Phase.reconverge {
					rerun = append(rerun, n.Name)
				}
			}
			d.log().Warn("the state file says this spec's run finished, but the host does not show it; running again",
				"finishedAt", st.FinishedAt, "missing", strings.Join(u.Missing, "; "), "kubeadmDone", u.KubeadmDone)
			st.unfinish(u, rerun)
		}
	}
	if opts.Only == "" && st.completedRun(d.SpecDigest) {
		d.finishedEarlier = true
		done := "already bootstrapped with this spec"
		if w.Command != "bootstrap" {
			done = "this " + w.Command + " already finished"
		}
		for _, n := range w.Nodes() {
			obs.PhaseFinished(n.Name, StatusUnchanged, Result{Message: done + " (" + st.FinishedAt + ")"}, nil)
		}
		return "", nil
	}
	r := &runner{d: d, obs: obs, opts: opts, st: st, state: useState}
	nodes := w.Nodes()
	for i := 0; i < len(nodes); {
		_, next, err := r.node(ctx, nodes, i)
		if err != nil {
			return r.failed, err
		}
		i = next
	}
	if useState && len(d.skipped) > 0 {
		// A run that left phases out has not done the spec's work: the
		// completed leaves stay recorded, so a run without --skip-phases
		// runs only the skipped ones and then finishes, and a run with the
		// same skips changes nothing.
		d.log().Info("not recorded as finished: phases were skipped; a run without --skip-phases runs them", "skipped", strings.Join(d.skipped, ","))
		return "", nil
	}
	if useState {
		if err := st.markDone(d); err != nil {
			d.log().Warn("could not record success in the state file", "error", err)
		}
	}
	return "", nil
}

// runner is one Run in progress.
type runner struct {
	d      *Data
	obs    Observer
	opts   RunOptions
	st     *state
	state  bool
	failed string
	// done counts the leaves skipped as completed by an earlier run;
	// resumed is set once the first leaf after them ran.
	done    int
	resumed bool
}

// node runs nodes[i] and its descendants, and returns its status (""
// when not selected) and the index after its subtree.
func (r *runner) node(ctx context.Context, nodes []Node, i int) (Status, int, error) {
	n := nodes[i]
	end := i + 1
	for end < len(nodes) && nodes[end].Depth > n.Depth {
		end++
	}
	if !r.opts.selected(n.Name) {
		return "", end, nil
	}
	if r.opts.Skipped(n.Name) {
		r.d.skipped = append(r.d.skipped, n.Name)
		for _, m := range nodes[i:end] {
			r.obs.PhaseFinished(m.Name, StatusSkipped, Result{Message: "skipped by --skip-phases"}, nil)
		}
		return StatusSkipped, end, nil
	}
	if end == i+1 {
		s, err := r.leaf(ctx, n)
		return s, end, err
	}
	r.obs.PhaseStarted(n.Name)
	var statuses []Status
	for j := i + 1; j < end; {
		s, next, err := r.node(ctx, nodes, j)
		if err != nil {
			r.obs.PhaseFinished(n.Name, StatusFailed, Result{Message: "sub-phase " + r.failed + " failed"}, err)
			return StatusFailed, end, err
		}
		if s != "" {
			statuses = append(statuses, s)
		}
		j = next
	}
	s := aggregate(statuses)
	r.obs.PhaseFinished(n.Name, s, Result{}, nil)
	return s, end, nil
}

// aggregate is a parent's status from its children's: Succeeded when one
// changed something, else Unchanged when one ran, else Skipped.
func aggregate(children []Status) Status {
	switch {
	case slices.Contains(children, StatusSucceeded):
		return StatusSucceeded
	case slices.Contains(children, StatusUnchanged):
		return StatusUnchanged
	}
	return StatusSkipped
}

// leaf runs one leaf phase.
func (r *runner) leaf(ctx context.Context, n Node) (Status, error) {
	d := r.d
	if r.opts.Only == "" && r.st.completedPhase(d.SpecDigest, n.Name) {
		r.obs.PhaseFinished(n.Name, StatusSkipped, Result{Message: "completed by an earlier run of this spec", NodeRegistered: n.Phase.RegistersNode && !d.DryRun}, nil)
		r.done++
		return StatusSkipped, nil
	}
	if r.done > 0 && !r.resumed {
		r.resumed = true
		d.resumedAt = n.Name
		defer func() { d.resumedAt = "" }()
		d.log().Info("resuming an unfinished run", "phase", n.Name, "completedEarlier", r.done)
		if ro, ok := r.obs.(ResumeObserver); ok {
			ro.Resumed(n.Name, r.done)
		}
	}
	r.obs.PhaseStarted(n.Name)
	start := time.Now()
	d.log().Info("phase started", "phase", n.Name)
	res, err := n.Phase.Run(ctx, d)
	dur := time.Since(start).Round(time.Millisecond)
	if err != nil {
		err = classified(n, err)
		d.log().Error("phase failed", "phase", n.Name, "duration", dur, "error", err)
		r.failed = n.Name
		r.obs.PhaseFinished(n.Name, StatusFailed, res, err)
		return StatusFailed, err
	}
	status := StatusSucceeded
	if !res.Changed {
		status = StatusUnchanged
	}
	d.log().Info("phase finished", "phase", n.Name, "status", status, "duration", dur)
	res.NodeRegistered = n.Phase.RegistersNode && !d.DryRun
	r.obs.PhaseFinished(n.Name, status, res, nil)
	if !r.state || (n.Phase.Completes && len(d.skipped) > 0) {
		return status, nil
	}
	if err := r.st.markPhase(d, n.Name, n.Phase.Durable); err != nil {
		d.log().Warn("could not record phase in the state file", "error", err)
	}
	return status, nil
}

// classified gives err the class and hint the phase declares, unless it
// already carries a class from where it was born.
func classified(n Node, err error) error {
	var re *errclass.Error
	if errors.As(err, &re) {
		return err
	}
	hint := n.Hint
	if hint == "" {
		hint = errclass.DefaultHint(n.Class)
	}
	return errclass.New(n.Class, hint, err)
}
