package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/redact"
)

// DefaultTailLines is how many output lines a report keeps (LogTail).
const DefaultTailLines = 50

// MaxTailLineLen bounds one LogTail line, in bytes; a longer line is cut
// and ends with "...".
const MaxTailLineLen = 1000

// Meta is what a report says about the run before it starts.
type Meta struct {
	// Machine identifies the machine and versions.
	Machine Machine
	// Command is "bootstrap" or "prepare".
	Command string
}

// Recorder collects the outcome of one run — phases, output, the failure
// — and writes the report through its writers when the run ends. All its
// methods are safe for concurrent use: the phase runner records phases
// while a signal handler goroutine may call Interrupted, and kubeadm's
// output arrives from other goroutines.
//
// The report is written once: the first of Finish, Interrupted and
// Recover writes it, later calls wait for that write and return its
// result, and recording after it changes nothing.
type Recorder struct {
	writers []Writer
	red     *redact.Redactor
	now     func() time.Time
	// log receives each final writer's duration at debug level (SetLogger;
	// nil: none).
	log atomic.Pointer[slog.Logger]

	mu      sync.Mutex
	rep     BootstrapReport
	running []string       // names of started, unfinished phases, oldest first
	index   map[string]int // phase name → index in rep.Phases (latest entry)
	planned []string
	failed  bool
	// nodeRegistered: the join's Node, reported when the run fails.
	nodeRegistered string
	tail           ring
	stream         *redact.Stream

	// progress: Begin was called; provisional reports go to the
	// ProgressWriters. pmu serialises their writes with the final one.
	progress bool
	pmu      sync.Mutex

	finishing bool
	done      chan struct{}
	final     BootstrapReport
	finishErr error
}

// NewRecorder starts the record of a run described by meta, to be written
// by writers when it ends. red redacts every string of the report (nil:
// a Redactor with no known values, which still applies the secret
// patterns). now is the clock (nil: time.Now); times are stored in UTC.
func NewRecorder(meta Meta, writers []Writer, red *redact.Redactor, now func() time.Time) *Recorder {
	if red == nil {
		red = redact.New()
	}
	if now == nil {
		now = time.Now
	}
	r := &Recorder{
		writers: writers,
		red:     red,
		now:     func() time.Time { return now().UTC() },
		index:   map[string]int{},
		tail:    ring{max: DefaultTailLines},
		stream:  red.NewStream(),
		done:    make(chan struct{}),
	}
	r.rep = BootstrapReport{APIVersion: APIVersion, Kind: Kind, Machine: meta.Machine, Command: meta.Command, StartTime: r.now(), Phases: []Phase{}}
	return r
}

// SetLogger makes the final report's writers log, at debug level, how
// long each took and its error ("outcome report: writer done"), so a run's
// log file shows where its time after the last phase went. l may be nil
// (no log, the default). Safe to call at any time; the write in progress
// uses the logger set when it started.
func (r *Recorder) SetLogger(l *slog.Logger) { r.log.Store(l) }

// SetUpgrade records an upgrade's plan: the Kubernetes versions before
// and after and the changed fields' paths (BootstrapReport.Upgrade).
func (r *Recorder) SetUpgrade(from, to string, changes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Upgrade = &Upgrade{FromVersion: from, ToVersion: to, Changes: append([]string(nil), changes...)}
}

// Plan declares the phases the run intends to run, in order. Planned
// phases that never start are reported as Skipped ("not reached" after a
// failure). Optional.
func (r *Recorder) Plan(names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.planned = append(r.planned, names...)
}

// PhaseStarted records that phase name started now. After Begin, a
// top-level phase (a name without "/") starting updates the provisional
// report.
func (r *Recorder) PhaseStarted(name string) {
	r.mu.Lock()
	if r.finishing {
		r.mu.Unlock()
		return
	}
	r.index[name] = len(r.rep.Phases)
	r.rep.Phases = append(r.rep.Phases, Phase{Name: name, StartTime: r.now()})
	r.running = append(r.running, name)
	if !r.progress || strings.Contains(name, "/") {
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	_ = r.writeProgress(false)
}

// Resumed records that the run resumed at phase name, skipping the phases
// an earlier unfinished run of the same spec completed (ResumedFrom; the
// first call counts), and updates the provisional report after Begin.
func (r *Recorder) Resumed(name string) {
	r.mu.Lock()
	if r.finishing || r.rep.ResumedFrom != "" {
		r.mu.Unlock()
		return
	}
	r.rep.ResumedFrom = name
	progress := r.progress
	r.mu.Unlock()
	if progress {
		_ = r.writeProgress(false)
	}
}

// Begin says that the run's phases start now, so that a run that never
// ends leaves a true record: it writes a provisional report through the
// ProgressWriters (the report file: result Failed, class Interrupted,
// "unfinished run", the phase running as failedPhase; the sentinel writer
// removes an earlier run's success sentinel), and each top-level phase
// that starts (and Resumed) rewrites it. The final report (Finish,
// Interrupted, Recover) replaces it. It returns the ProgressWriters'
// errors joined; a failing one does not stop the run. Call it once, before
// the first phase; without it no provisional report is written.
func (r *Recorder) Begin() error {
	r.mu.Lock()
	if r.finishing || r.progress {
		r.mu.Unlock()
		return nil
	}
	r.progress = true
	r.mu.Unlock()
	return r.writeProgress(true)
}

// unfinishedHint is the provisional report's hint.
const unfinishedHint = "This run had not ended when the report was written. If machineadm is no longer running, it was killed (SIGKILL, out-of-memory kill, power loss) before it could write its final report: run the same command again, it resumes at the first phase that did not finish; `journalctl -b` may show why it stopped."

// writeProgress writes the provisional report through the ProgressWriters,
// unless the final report is being written or was written.
func (r *Recorder) writeProgress(first bool) error {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	r.mu.Lock()
	if r.finishing {
		r.mu.Unlock()
		return nil
	}
	p := r.provisionalLocked()
	r.mu.Unlock()
	var errs []error
	for _, w := range r.writers {
		pw, ok := w.(ProgressWriter)
		if !ok {
			continue
		}
		c := p
		c.Phases = append([]Phase(nil), p.Phases...)
		c.LogTail = append([]string(nil), p.LogTail...)
		if err := pw.WriteProgress(&c, first); err != nil {
			errs = append(errs, &WriterError{Writer: w.Name(), Err: err})
		}
	}
	return errors.Join(errs...)
}

// provisionalLocked is the report of the run so far, redacted, as it
// should read if the run never ends: running phases Failed ("running when
// this report was written"), phases not started yet left out, result
// Failed with class Interrupted in the most recently started phase (or the
// failure already recorded). r.mu must be held.
func (r *Recorder) provisionalLocked() BootstrapReport {
	p := r.rep
	now := r.now()
	p.Phases = append(make([]Phase, 0, len(r.rep.Phases)), r.rep.Phases...)
	for i := range p.Phases {
		if p.Phases[i].Status == "" {
			p.Phases[i].Status = PhaseFailed
			p.Phases[i].Message = "running when this report was written (unfinished run)"
			p.Phases[i].DurationMs = durationMs(now.Sub(p.Phases[i].StartTime))
		}
	}
	p.Result = ResultFailed
	if !r.failed {
		p.FailedPhase, p.ErrorClass, p.Hint = r.current(), errclass.Interrupted, unfinishedHint
		p.Error = fmt.Sprintf("unfinished run: machineadm (pid %d) had not ended when this report was written", os.Getpid())
		if p.FailedPhase != "" {
			p.Error += "; phase " + p.FailedPhase + " was running"
		}
	}
	p.NodeRegistered = r.nodeRegistered
	p.EndTime = now
	p.LogTail = r.tail.lines()
	return r.redact(p)
}

// durationMs is d in whole milliseconds, rounded to the nearest: unbiased,
// so that the durations of many short phases add up to their time. With
// truncation each phase lost half a millisecond on average: the ~50 phases
// of an init some 25 ms (make bench-e2e's "between phases", 38 ms before
// and 13 ms after).
func durationMs(d time.Duration) int64 { return d.Round(time.Millisecond).Milliseconds() }

// PhaseFinished records the end of phase name with status and an optional
// message. A phase that was never started (a skipped one) is recorded with
// a duration of zero. Finishing a phase Failed without calling Fail makes
// the run fail with a class from Classify(name, message).
func (r *Recorder) PhaseFinished(name string, status PhaseStatus, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finishing {
		return
	}
	r.endPhase(name, status, message)
}

// PhaseDetails records, on the started or finished phase name, the
// kernel parameters it left (Phase.Sysctl) and its warnings
// (Phase.Warnings). Nothing happens for a phase not recorded yet, or once
// the report is being written.
func (r *Recorder) PhaseDetails(name string, sysctl []SysctlValue, warnings []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.index[name]
	if r.finishing || !ok {
		return
	}
	p := &r.rep.Phases[i]
	p.Sysctl = append([]SysctlValue(nil), sysctl...)
	p.Warnings = append([]string(nil), warnings...)
}

// NodeRegistered records that the join registered its Node
// (Machine.NodeName) in the cluster. When the run fails, the report's
// NodeRegistered names it and the hint starts by telling the operator to
// delete it before retrying. A successful run's report leaves the field
// empty.
func (r *Recorder) NodeRegistered() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.finishing {
		r.nodeRegistered = r.rep.Machine.NodeName
	}
}

// PhaseSkipped records that phase name did not run, and why.
func (r *Recorder) PhaseSkipped(name, reason string) {
	r.PhaseFinished(name, PhaseSkipped, reason)
}

// endPhase sets the status of the running phase name (or adds an entry).
// r.mu must be held.
func (r *Recorder) endPhase(name string, status PhaseStatus, message string) {
	now := r.now()
	i, ok := r.index[name]
	if !ok || r.rep.Phases[i].Status != "" {
		i = len(r.rep.Phases)
		r.index[name] = i
		r.rep.Phases = append(r.rep.Phases, Phase{Name: name, StartTime: now})
	}
	p := &r.rep.Phases[i]
	p.Status, p.Message = status, message
	p.DurationMs = durationMs(now.Sub(p.StartTime))
	for j, n := range r.running {
		if n == name {
			r.running = append(r.running[:j], r.running[j+1:]...)
			break
		}
	}
}

// markFailed ends the running phase name as Failed; a phase already
// finished Failed keeps its entry, any other gets a new Failed entry.
// r.mu must be held.
func (r *Recorder) markFailed(name, msg string) {
	if i, ok := r.index[name]; ok && r.rep.Phases[i].Status == PhaseFailed {
		if r.rep.Phases[i].Message == "" {
			r.rep.Phases[i].Message = msg
		}
		return
	}
	r.endPhase(name, PhaseFailed, msg)
}

// current is the most recently started phase still running, or "".
// r.mu must be held.
func (r *Recorder) current() string {
	if len(r.running) == 0 {
		return ""
	}
	return r.running[len(r.running)-1]
}

// Fail records that the run failed in phase (the running phase when phase
// is ""), with err as the cause. The phase is marked Failed. The first
// failure is the one reported: its error message, its class and hint
// (carried by err, errclass.Error, where the failure was classified;
// Internal when it carries none), with the class's default hint when err
// has none. Fail does not write the report: call Finish.
func (r *Recorder) Fail(phase string, err error) {
	if err == nil {
		err = errors.New("unknown failure")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finishing {
		return
	}
	if phase == "" {
		phase = r.current()
	}
	class, hint := errclass.Of(err)
	if hint == "" {
		hint = errclass.DefaultHint(class)
	}
	r.failLocked(phase, class, hint, err.Error())
}

// failLocked marks phase failed and records the first failure.
func (r *Recorder) failLocked(phase string, class errclass.Class, hint, msg string) {
	if phase != "" {
		r.markFailed(phase, msg)
	}
	if r.failed {
		return
	}
	r.failed = true
	r.rep.FailedPhase, r.rep.ErrorClass, r.rep.Hint, r.rep.Error = phase, class, hint, msg
}

// Interrupted records that the run was stopped by sig: every running
// phase is marked Failed, the failure (unless one was already recorded) is
// class Interrupted in the most recently started running phase, and the
// report is written as by Finish. It is meant for a signal handler
// goroutine while a phase still runs; see WatchSignals.
func (r *Recorder) Interrupted(ctx context.Context, sig os.Signal) error {
	r.mu.Lock()
	if !r.finishing {
		msg := "interrupted by signal " + signalName(sig)
		cur := r.current()
		for _, name := range append([]string(nil), r.running...) {
			r.endPhase(name, PhaseFailed, msg)
		}
		if !r.failed {
			r.failed = true
			r.rep.FailedPhase, r.rep.ErrorClass, r.rep.Hint, r.rep.Error = cur, errclass.Interrupted, errclass.InterruptedHint(r.rep.Command), msg
		}
	}
	return r.finishLocked(ctx)
}

// Finish ends the record and writes the report through every writer,
// concurrently; a failing writer does not stop the others. It returns the
// writers' errors joined (each prefixed with the writer's name), or nil.
// Phases still running are marked Failed ("did not finish"); planned
// phases that never started are added as Skipped. Finish is idempotent: a
// second call waits for the first write and returns its result. ctx bounds
// the writers.
func (r *Recorder) Finish(ctx context.Context) error {
	r.mu.Lock()
	return r.finishLocked(ctx)
}

// finishLocked is Finish with r.mu held; it unlocks r.mu.
func (r *Recorder) finishLocked(ctx context.Context) error {
	if r.finishing {
		r.mu.Unlock()
		select {
		case <-r.done:
			return r.finishErr
		case <-ctx.Done():
			return fmt.Errorf("waiting for the report to be written: %w", ctx.Err())
		}
	}
	r.finishing = true
	r.closeLocked()
	final := r.redact(r.rep)
	r.mu.Unlock()

	// A provisional report being written is written before the final one.
	r.pmu.Lock()
	err := runWriters(ctx, r.writers, &final, r.log.Load())
	r.pmu.Unlock()
	r.final, r.finishErr = final, err
	close(r.done)
	return err
}

// closeLocked completes the report: running phases, planned phases,
// result and end time.
func (r *Recorder) closeLocked() {
	if !r.failed {
		for _, p := range r.rep.Phases {
			if p.Status == PhaseFailed {
				r.failLocked(p.Name, errclass.Internal, "A phase failed without recording why: this is a machineadm bug; read the log tail.", p.Message)
				break
			}
		}
	}
	for _, name := range append([]string(nil), r.running...) {
		r.failLocked(name, errclass.Internal, "A phase did not report its end: this is a machineadm bug; read the log tail.", "phase "+name+" did not finish before the report was written")
	}
	for _, name := range r.planned {
		if _, ok := r.index[name]; ok {
			continue
		}
		msg := "not run"
		if r.failed {
			msg = "not reached: an earlier phase failed"
		}
		r.endPhase(name, PhaseSkipped, msg)
	}
	r.rep.Result = ResultSucceeded
	if r.failed {
		r.rep.Result = ResultFailed
		if n := r.nodeRegistered; n != "" {
			r.rep.NodeRegistered = n
			r.rep.Hint = nodeRegisteredHint(n) + " " + r.rep.Hint
		}
	}
	r.rep.EndTime = r.now()
	r.rep.LogTail = r.tail.lines()
}

// nodeRegisteredHint is what a failed join's hint starts with when its
// Node was registered (NodeRegistered).
func nodeRegisteredHint(node string) string {
	return "The Node " + node + " exists in the cluster (this join's kubelet registered it): delete it (kubectl delete node " + node + ") before retrying the join on a reset or new machine of that name."
}

// redact returns a copy of rep with every string redacted.
func (r *Recorder) redact(rep BootstrapReport) BootstrapReport {
	out := rep
	s := r.red.String
	m := &out.Machine
	m.Hostname, m.NodeName, m.SpecName = s(m.Hostname), s(m.NodeName), s(m.SpecName)
	out.Phases = append(make([]Phase, 0, len(rep.Phases)), rep.Phases...)
	for i := range out.Phases {
		p := &out.Phases[i]
		p.Message = s(p.Message)
		if p.Warnings != nil {
			p.Warnings = r.red.Strings(append([]string(nil), p.Warnings...))
		}
		if p.Sysctl != nil {
			p.Sysctl = append([]SysctlValue(nil), p.Sysctl...)
			for j := range p.Sysctl {
				v := &p.Sysctl[j]
				v.Key, v.Desired, v.Effective, v.ReadError, v.BootValue, v.BootFile = s(v.Key), s(v.Desired), s(v.Effective), s(v.ReadError), s(v.BootValue), s(v.BootFile)
			}
		}
	}
	if rep.Upgrade != nil {
		u := *rep.Upgrade
		u.FromVersion, u.ToVersion = s(u.FromVersion), s(u.ToVersion)
		u.Changes = r.red.Strings(append([]string(nil), u.Changes...))
		out.Upgrade = &u
	}
	out.NodeRegistered = s(out.NodeRegistered)
	out.Hint, out.Error = s(out.Hint), s(out.Error)
	out.LogTail = r.red.Strings(append([]string(nil), rep.LogTail...))
	return out
}

// Report returns the written report after the record was finished, and
// false before.
func (r *Recorder) Report() (BootstrapReport, bool) {
	select {
	case <-r.done:
		return r.final, true
	default:
		return BootstrapReport{}, false
	}
}

// signalName names a signal for the report ("terminated" for SIGTERM,
// as the Go runtime names it).
func signalName(sig os.Signal) string {
	if sig == nil {
		return "(unknown)"
	}
	return sig.String()
}
