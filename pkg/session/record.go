package session

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/redact"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/report/nodeannotation"
)

// reportFinishTimeout bounds writing the outcome report at the end of a
// run (the HTTP writer retries within it).
const reportFinishTimeout = 90 * time.Second

// signalReportTimeout bounds writing the report after SIGTERM/SIGINT.
const signalReportTimeout = 15 * time.Second

// record is the outcome report of one run and the redacting console and
// logger around it.
type record struct {
	command Command
	out     *redact.Writer
	log     *slog.Logger
	rec     *report.Recorder
	red     *redact.Redactor
	stopSig func()
	// reportFile is the host path of the report file the run writes.
	reportFile string
	// logFile is the run's log file, opened when the workflow starts (bad
	// input leaves no file behind); verbose also shows kubeadm's output on
	// the console.
	logFile *logSink
	verbose bool
}

// startRecord begins the outcome report of o.Command for cfg (nil when the
// spec is invalid), wraps the logger and the console so that they redact
// the spec's secrets, and makes SIGTERM/SIGINT write an Interrupted report
// and exit 1. The writers follow the spec's report settings, except:
//   - a dry run writes its report under its own directory (reportRoot)
//     and never to the console, the sentinel or a URL;
//   - prepare never writes the Cluster API success sentinel;
//   - a real bootstrap (init or join) also annotates its Node with the
//     outcome (reportSettings).
func startRecord(o Options, cfg *machineadm.MachineBootstrapConfig, reportRoot string) *record {
	red := redact.New()
	if cfg != nil {
		red = redact.ForSpec(cfg, o.Root)
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	r := &record{command: o.Command, red: red, out: red.NewWriter(out), verbose: o.Verbose}

	settings, opts := reportSettings(o, cfg, reportRoot)
	opts.Stdout = r.out
	path := settings.Path
	if path == "" {
		path = report.DefaultPath
	}
	r.reportFile = report.HostPath(reportRoot, path)
	r.rec = report.NewRecorder(report.MetaFor(cfg, string(o.Command)), report.WritersFor(settings, opts), red, nil)
	// The structured log: the caller's (standard error: warnings only,
	// unless --log-level), the log file at debug level, and the report's
	// log tail for warnings (the report holds the error). Redacted before
	// any of them.
	tail := slog.NewTextHandler(lineFunc(func(l string) { r.rec.AppendOutput(l) }), &slog.HandlerOptions{Level: slog.LevelWarn})
	handlers := fanout{forRun(log.Handler()), belowError{tail}}
	if o.LogFile {
		r.logFile = &logSink{dir: filepath.Dir(r.reportFile)}
		handlers = append(handlers, slog.NewTextHandler(r.logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	r.log = slog.New(red.NewHandler(handlers))
	// The final writers' durations and the Node annotation's wait for the
	// Node go to the log file (debug level): where a run's time after its
	// last phase went.
	r.rec.SetLogger(r.log)
	for _, w := range opts.Extra {
		if nw, ok := w.(*nodeannotation.Writer); ok {
			nw.Log = r.log
		}
	}
	r.stopSig = r.rec.WatchSignals(signalReportTimeout, func() { os.Exit(ExitFailed) })
	return r
}

// reportSettings are the report writers' settings of a run of o with the
// spec cfg (nil when the spec is invalid), reporting under reportRoot:
// the spec's spec.report, except that
//   - a dry run never writes to the console, the sentinel or a URL;
//   - only a bootstrap writes the Cluster API success sentinel;
//   - a real bootstrap, init or join, also annotates its Node with the
//     outcome (nodeannotation.Writer with the kubelet's kubeconfig, which
//     kubeadm writes in both): it is how the Cluster API provider learns
//     that a Machine bootstrapped, the first control plane's included.
func reportSettings(o Options, cfg *machineadm.MachineBootstrapConfig, reportRoot string) (machineadm.Report, report.Options) {
	settings := machineadm.Report{}
	if cfg != nil {
		settings = cfg.Spec.Report
	}
	opts := report.Options{Root: reportRoot}
	if o.Command != Bootstrap {
		settings.Sentinel = "-"
	}
	if o.DryRun {
		no := false
		settings.Console = &no
		settings.Sentinel = "-"
		settings.URL = ""
	} else if (o.Command == Bootstrap || o.Command == Upgrade) && cfg != nil {
		opts.Extra = append(opts.Extra, &nodeannotation.Writer{Root: reportRoot})
	}
	return settings, opts
}

// finish writes the report; a writer's failure is logged, never fatal.
func (r *record) finish() {
	r.stopSig()
	ctx, cancel := context.WithTimeout(context.Background(), reportFinishTimeout)
	defer cancel()
	if err := r.rec.Finish(ctx); err != nil {
		r.log.Warn("outcome report: a writer failed", "error", err)
	}
	_ = r.out.Flush()
	if r.logFile != nil {
		r.logFile.close()
	}
}

// logPath is the run's log file, or "" without one.
func (r *record) logPath() string {
	if r.logFile == nil {
		return ""
	}
	return r.logFile.path()
}

// invalid records bad input — an invalid spec or a usage error such as an
// unknown phase name — as class InvalidSpec and writes the report; the
// caller returns err (exit code 2).
//
// A usage error (a typo on the command line: an unknown phase name) never
// replaces the report of an earlier run: when a report file is there, it
// is left as it is and the error is only printed.
func (r *record) invalid(err error) error {
	var ue *UsageError
	if errors.As(err, &ue) {
		if _, statErr := os.Stat(r.reportFile); statErr == nil {
			r.stopSig()
			r.log.Warn("usage error not recorded: it would replace the last run's report", "report", r.reportFile)
			_ = r.out.Flush()
			return err
		}
	}
	r.rec.Fail("", Classify(err))
	r.finish()
	return err
}

// failed records a failure before any phase ran and writes the report;
// the caller returns err (exit code 1).
func (r *record) failed(err error) error {
	r.rec.Fail("", Classify(err))
	r.finish()
	return err
}

// refused records a run refused before any phase, with the class of its
// cause, and writes the report; the caller returns err (a *SealedError:
// exit code 2).
func (r *record) refused(err error) error {
	r.rec.Fail("", Classify(err))
	r.finish()
	return err
}

// kubeadmOutput returns the sink for kubeadm's output lines and a func to
// call when output ends. One redacting stream feeds the report's log tail,
// the log file and, with verbose (-v), the console, so a secret spread over
// several lines (a PEM block) is caught even when its value is not known in
// advance.
func (r *record) kubeadmOutput() (sink func(string), done func()) {
	var tee []io.Writer
	if r.verbose {
		tee = append(tee, r.out)
	}
	if r.logFile != nil {
		r.logFile.open()
		tee = append(tee, r.logFile)
	}
	w := r.rec.OutputWriter(io.MultiWriter(tee...))
	return func(line string) { _, _ = io.WriteString(w, line+"\n") }, func() { _ = w.Close() }
}

// workflow runs w and records it; it returns a *RunFailedError for a
// failed phase. Panics are recorded as class Internal.
func (r *record) workflow(ctx context.Context, w *phases.Workflow, d *phases.Data, opts phases.RunOptions) (err error) {
	defer r.rec.Recover(ctx, &err)
	if r.logFile != nil {
		r.logFile.open()
	}
	if opts.Only == "" {
		r.rec.Plan(w.Names()...)
	}
	// From here on the host may change: a provisional report replaces the
	// last run's (and its success sentinel goes), so a run killed where no
	// handler runs never leaves an earlier success claimed.
	if err := r.rec.Begin(); err != nil {
		r.log.Warn("outcome report: provisional report not written", "error", err)
	}
	c := newConsole(r.rec, r.out, w, d.DryRun)
	failed, runErr := w.Run(ctx, d, c, opts)
	c.done(runErr == nil)
	r.finish()
	if runErr == nil {
		return nil
	}
	class, hint := errclass.Of(runErr)
	if rep, ok := r.rec.Report(); ok && rep.ErrorClass != "" {
		class, hint = rep.ErrorClass, rep.Hint
	}
	return &RunFailedError{Command: string(r.command), Phase: failed, Class: class, Hint: hint, Err: errors.New(r.red.String(runErr.Error())),
		DryRunOnly: errors.As(runErr, new(*phases.DryRunOnlyError))}
}
