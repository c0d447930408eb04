package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/redact"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/report/nodeannotation"
	"github.com/machineadm/machineadm/pkg/spec"
)

// reportFinishTimeout bounds writing the outcome report at the end of a
// run (the HTTP writer retries within it).
const reportFinishTimeout = 90 * time.Second

// signalReportTimeout bounds writing the report after SIGTERM/SIGINT.
const signalReportTimeout = 15 * time.Second

// runFlags move where a run records itself: its outcome report and its
// state directory. bootstrap takes them as hidden flags (for tests);
// prepare fills root from --root.
type runFlags struct {
	// root is prepended to every path the report writers touch (report
	// file, sentinel, console device). Hidden; for tests and image builds.
	root string
	// workDir replaces /var/lib/machineadm for the state file and kubeadm
	// configuration. Hidden; for tests.
	workDir string
}

func (f *runFlags) bind(c *cobra.Command) {
	c.Flags().StringVar(&f.root, "report-root", "/", "root directory under which the outcome report, the sentinel and the console device are written")
	c.Flags().StringVar(&f.workDir, "work-dir", defaultWorkDir, "machineadm's state directory (state file, kubeadm configuration, patches)")
	_ = c.Flags().MarkHidden("report-root")
	_ = c.Flags().MarkHidden("work-dir")
}

// recordedRun is one recorded run of bootstrap or prepare.
type recordedRun struct {
	out     *redact.Writer
	o       *options
	rec     *report.Recorder
	red     *redact.Redactor
	stopSig func()
}

// startRun begins the outcome report of command for cfg (nil when the spec
// is invalid), wraps the logger so that it redacts the spec's secrets, and
// makes SIGTERM/SIGINT write an Interrupted report and exit 1. A dry run
// writes its report under workDir and never to the console or sentinel.
func startRun(o *options, command string, cfg *machineadm.MachineBootstrapConfig, rf *runFlags, dryRun bool, workDir string) *recordedRun {
	red := redact.New()
	if cfg != nil {
		red = redact.ForSpec(cfg, "/")
	}
	o.log = slog.New(red.NewHandler(o.log.Handler()))
	// Everything the run prints — dry-run plans and diffs, kubeadm's
	// output, the summary — goes through the same redactor.
	out := red.NewWriter(o.out)
	o.out = out

	settings := machineadm.Report{}
	if cfg != nil {
		settings = cfg.Spec.Report
	}
	opts := report.Options{Root: rf.root, Stdout: o.out}
	if command == "prepare" {
		// Only a bootstrap tells Cluster API that the node is up.
		settings.Sentinel = "-"
	}
	if dryRun {
		opts.Root = workDir
		no := false
		settings.Console = &no
		settings.Sentinel = "-"
		settings.URL = ""
	} else if command == "bootstrap" && cfg != nil && cfg.Spec.Action == machineadm.ActionJoin {
		opts.Extra = append(opts.Extra, &nodeannotation.Writer{Root: rf.root})
	}
	r := &recordedRun{o: o, red: red, out: out}
	r.rec = report.NewRecorder(report.MetaFor(cfg, command), report.WritersFor(settings, opts), red, nil)
	r.stopSig = r.rec.WatchSignals(signalReportTimeout, func() { os.Exit(ExitFailed) })
	return r
}

// finish writes the report; a writer's failure is logged, never fatal.
func (r *recordedRun) finish() {
	r.stopSig()
	ctx, cancel := context.WithTimeout(context.Background(), reportFinishTimeout)
	defer cancel()
	if err := r.rec.Finish(ctx); err != nil {
		r.o.log.Warn("outcome report: a writer failed", "error", err)
	}
	_ = r.out.Flush()
}

// invalid records bad input — an invalid spec or a usage error such as an
// unknown phase name — as class InvalidSpec and writes the report; the
// caller returns err (exit code 2).
func (r *recordedRun) invalid(err error) error {
	if spec.IsInvalidSpec(err) {
		r.rec.Fail("", err)
	} else {
		r.rec.Fail("", report.NewError(report.ClassInvalidSpec, "fix the command line; see --help", err))
	}
	r.finish()
	return err
}

// failed records a failure before any phase ran (class from err) and
// writes the report; the caller returns err (exit code 1).
func (r *recordedRun) failed(err error) error {
	r.rec.Fail("", err)
	r.finish()
	return err
}

// kubeadmOutput returns the sink for kubeadm's output lines and a func to
// call when output ends. One redacting stream feeds both the console and
// the report's log tail, so a secret spread over several lines (a PEM
// block) is caught even when its value is not known in advance.
func (r *recordedRun) kubeadmOutput(out io.Writer) (sink func(string), done func()) {
	w := r.rec.OutputWriter(out)
	return func(line string) { _, _ = io.WriteString(w, line+"\n") }, func() { _ = w.Close() }
}

// workflow runs w and records it; it returns a *RunFailedError for a
// failed phase. Panics are recorded as class Internal.
func (r *recordedRun) workflow(ctx context.Context, command string, w *phases.Workflow, d *phases.Data, opts phases.RunOptions) (err error) {
	defer r.rec.Recover(ctx, &err)
	if opts.Only == "" {
		r.rec.Plan(w.Names()...)
	}
	obs := &observer{rec: r.rec, out: r.o.out, start: map[string]time.Time{}}
	failed, runErr := w.Run(ctx, d, obs, opts)
	r.finish()
	if runErr != nil {
		// The class and hint the report shows (it also read the output).
		class, hint := report.Classify(failed, runErr)
		if rep, ok := r.rec.Report(); ok && rep.ErrorClass != "" {
			class, hint = rep.ErrorClass, rep.Hint
		}
		return &RunFailedError{Command: command, Phase: failed, Class: class, Hint: hint, Err: fmt.Errorf("%s", r.red.String(runErr.Error()))}
	}
	return nil
}

// RunFailedError is a bootstrap or prepare that ran and failed (exit code
// 1). Its message is redacted.
type RunFailedError struct {
	// Command is "bootstrap" or "prepare".
	Command string
	// Phase is the failed phase.
	Phase string
	// Class and Hint are the report's error class and hint.
	Class report.Class
	Hint  string
	// Err is the cause.
	Err error
}

func (e *RunFailedError) Error() string {
	msg := fmt.Sprintf("%s: phase %s failed (%s): %v", e.Command, e.Phase, e.Class, e.Err)
	if e.Hint != "" {
		msg += "\nhint: " + e.Hint
	}
	return msg
}

func (e *RunFailedError) Unwrap() error { return e.Err }

// observer reports phases to the recorder and prints one console line per
// phase.
type observer struct {
	rec   *report.Recorder
	out   io.Writer
	start map[string]time.Time
}

func (c *observer) PhaseStarted(name string) {
	c.start[name] = time.Now()
	c.rec.PhaseStarted(name)
	fmt.Fprintf(c.out, "[machineadm] phase %s ...\n", name)
}

func (c *observer) PhaseFinished(name string, status phases.Status, msg string, err error) {
	if status == phases.StatusFailed {
		c.rec.Fail(name, err)
	} else {
		c.rec.PhaseFinished(name, report.PhaseStatus(status), msg)
	}
	d := ""
	if t, ok := c.start[name]; ok {
		d = " in " + time.Since(t).Round(time.Millisecond).String()
	}
	line := fmt.Sprintf("[machineadm] phase %s: %s%s", name, status, d)
	if msg != "" {
		line += " — " + msg
	}
	fmt.Fprintln(c.out, line)
}
