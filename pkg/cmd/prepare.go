package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/spec"
)

type prepareFlags struct {
	file       string
	root       string
	dryRun     bool
	skipPhases []string
}

// newPrepareCommand builds `machineadm prepare`: host preparation only.
func newPrepareCommand(o *options) *cobra.Command {
	f := &prepareFlags{}
	c := &cobra.Command{
		Use:   "prepare -f SPEC [--root DIR] [--dry-run] [--skip-phases a,b]",
		Short: "Prepare this host (files, kernel modules, sysctl, containerd, static pods) without joining a cluster",
		Long: `Runs the host-preparation phases of the machine spec, in order:

  files           write spec.host.files (content, or a remote source verified by sha256)
  kernel-modules  load spec.host.kernelModules (and br_netfilter for net.bridge.* keys);
                  persist them in /etc/modules-load.d/machineadm.conf
  sysctl          set spec.host.sysctl live through /proc/sys, read each value back;
                  persist them in /etc/sysctl.d/90-machineadm.conf
  containerd      write config.toml (schema 2 for containerd 1.x, 3 for 2.x),
                  hosts.toml under /etc/containerd/certs.d and the proxy drop-in;
                  restart containerd only when config.toml or the drop-in changed
  static-pods     write spec.host.staticPods to the kubelet's static pod directory

Every input is checked before anything is written: an unknown sysctl key, an
unknown owner or a remote file whose sha256 does not match stops the run with
nothing changed. A second run changes nothing and reports every phase as
unchanged.

--root DIR prepares a mounted machine image instead of this host: files are
written under DIR, and nothing live is touched (no module loaded, no sysctl
value set, no service restarted). --dry-run prints the plan, with a unified
diff per file (contents of files that are not world-readable are hidden),
and changes nothing.

Exit codes: 0 success, 1 a phase failed (its class and hint are printed),
2 invalid spec or usage (nothing was changed).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPrepare(cmd.Context(), o, f)
		},
	}
	c.Flags().StringVarP(&f.file, "file", "f", "", "machine spec path, or - for standard input")
	c.Flags().StringVar(&f.root, "root", "/", "root directory of the machine to prepare (an image mounted at DIR: files only, nothing live)")
	c.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the plan with a diff per file; change nothing")
	c.Flags().StringSliceVar(&f.skipPhases, "skip-phases", nil, "phases not to run, by name: "+strings.Join(host.Names(host.Steps(nil)), ", "))
	return c
}

// PrepareFailedError is a preparation that ran and failed (exit code 1).
type PrepareFailedError struct {
	// Phase is the step that failed, or "check" when the checks before
	// any write failed.
	Phase string
	Class report.Class
	Hint  string
	Err   error
}

func (e *PrepareFailedError) Error() string {
	msg := fmt.Sprintf("prepare phase %s failed (%s): %v", e.Phase, e.Class, e.Err)
	if e.Hint != "" {
		msg += "\nhint: " + e.Hint
	}
	return msg
}

func (e *PrepareFailedError) Unwrap() error { return e.Err }

func runPrepare(ctx context.Context, o *options, f *prepareFlags) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	root, err := checkRoot(f.root)
	if err != nil {
		return err
	}
	data, err := readSpecBytes(o, f.file)
	if err != nil {
		return err
	}
	// The report goes under --root (an image keeps the record of its
	// preparation); a dry run's into a new temporary directory.
	reportRoot := root
	if f.dryRun {
		if reportRoot, err = os.MkdirTemp("", "machineadm-prepare-dryrun-"); err != nil {
			return err
		}
	}
	l, loadErr := spec.Load(data, f.file)
	var cfg *machineadm.MachineBootstrapConfig
	if loadErr == nil {
		cfg = l.Config
	}
	rec := startRun(o, "prepare", cfg, &runFlags{root: reportRoot}, f.dryRun, reportRoot)
	if f.dryRun {
		defer fmt.Fprintf(o.out, "dry run: the report is in %s\n", reportRoot)
	}
	if loadErr != nil {
		return rec.invalid(loadErr)
	}
	for _, w := range l.Warnings {
		o.log.Warn("spec warning", "field", w.Field, "message", w.Message)
	}
	defer rec.finish()
	defer rec.rec.Recover(ctx, &err) // runs first: records a panic before finish
	steps := host.Steps(l.Config)
	names := host.Names(steps)
	for _, s := range f.skipPhases {
		if !slices.Contains(names, s) {
			return rec.invalid(usagef("--skip-phases: unknown phase %q (phases: %s)", s, strings.Join(names, ", ")))
		}
	}
	rec.rec.Plan(append([]string{phases.HostCheckPhase}, names...)...)
	var run []host.Step
	for _, s := range steps {
		if !slices.Contains(f.skipPhases, s.Name) {
			run = append(run, s)
		}
	}
	env := &host.Env{Root: root, DryRun: f.dryRun, Log: o.log, Out: o.out, Offline: root != "/"}
	if !env.Offline {
		env.CRIReady = criReady(l.Config)
		sd := service.NewSystemd()
		defer sd.Close()
		env.Services = sd
	}
	rec.rec.PhaseStarted(phases.HostCheckPhase)
	if err := host.Check(ctx, env, run); err != nil {
		rec.rec.Fail(phases.HostCheckPhase, err)
		class, hint := report.ClassOf(err)
		return &PrepareFailedError{Phase: phases.HostCheckPhase, Class: class, Hint: hint, Err: err}
	}
	rec.rec.PhaseFinished(phases.HostCheckPhase, report.PhaseUnchanged, "checked "+strings.Join(host.Names(run), ", "))
	changed := 0
	for _, s := range steps {
		if slices.Contains(f.skipPhases, s.Name) {
			fmt.Fprintf(o.out, "[prepare] %s: skipped (--skip-phases)\n", s.Name)
			rec.rec.PhaseSkipped(s.Name, "skipped by --skip-phases")
			continue
		}
		rec.rec.PhaseStarted(s.Name)
		res, err := s.Apply(ctx, env)
		printResult(o, s.Name, res, f.dryRun)
		if err != nil {
			rec.rec.Fail(s.Name, err)
			class, hint := report.ClassOf(err)
			return &PrepareFailedError{Phase: s.Name, Class: class, Hint: hint, Err: err}
		}
		status := report.PhaseUnchanged
		if res.Changed {
			status = report.PhaseSucceeded
		}
		rec.rec.PhaseFinished(s.Name, status, strings.Join(res.Changes, "; "))
		if res.Changed {
			changed++
		}
	}
	verb := "changed"
	if f.dryRun {
		verb = "would change"
	}
	fmt.Fprintf(o.out, "[prepare] done: %d of %d phases %s\n", changed, len(run), verb)
	return nil
}

func printResult(o *options, name string, res host.Result, dryRun bool) {
	status := "unchanged"
	switch {
	case res.Changed && dryRun:
		status = "would change"
	case res.Changed:
		status = "changed"
	}
	fmt.Fprintf(o.out, "[prepare] %s: %s\n", name, status)
	for _, c := range res.Changes {
		fmt.Fprintf(o.out, "  %s\n", c)
	}
}

// checkRoot requires an existing directory and returns it absolute and
// clean.
func checkRoot(root string) (string, error) {
	if root == "" {
		return "", usagef("--root must not be empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", usagef("--root: %v", err)
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", usagef("--root %s: not a directory", root)
	}
	return abs, nil
}
