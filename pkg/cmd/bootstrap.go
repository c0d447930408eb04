package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/version"
)

// defaultWorkDir is machineadm's state directory on a host.
const defaultWorkDir = "/var/lib/machineadm"

type bootstrapFlags struct {
	file       string
	dryRun     bool
	dryRunDir  string
	skipPhases []string
}

func (f *bootstrapFlags) bind(c *cobra.Command, withSkip bool) {
	c.Flags().StringVarP(&f.file, "file", "f", "", "machine spec path, or - for standard input")
	c.Flags().BoolVar(&f.dryRun, "dry-run", false, "change nothing: host phases print their plan, kubeadm runs in its dry-run mode and writes to --dry-run-dir")
	c.Flags().StringVar(&f.dryRunDir, "dry-run-dir", "", "directory for a dry run's files (default: a new temporary directory, printed at the end)")
	if withSkip {
		c.Flags().StringSliceVar(&f.skipPhases, "skip-phases", nil, "phases not to run, by name (see `machineadm bootstrap phase`)")
	}
}

func newBootstrapCommand(o *options) *cobra.Command {
	f := &bootstrapFlags{}
	c := &cobra.Command{
		Use:   "bootstrap -f SPEC",
		Short: "Prepare this host and create or join a cluster with the embedded kubeadm",
		Long: `Runs the bootstrap workflow for the machine spec: host preparation phases,
machineadm's kubeadm-config phase, then kubeadm's init phases (action Init) or
join phases (action Join) in-process, each as a named phase. A failure names
the phase that failed. Running again after success changes nothing; running
again after an interrupted run resumes at the first phase that did not finish.

Exit codes: 0 success, 1 the bootstrap failed (see the report), 2 invalid spec
or usage (nothing was changed).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBootstrap(cmd.Context(), o, f, "")
		},
	}
	f.bind(c, true)
	c.AddCommand(newBootstrapPhaseCommand(o))
	return c
}

func newBootstrapPhaseCommand(o *options) *cobra.Command {
	f := &bootstrapFlags{}
	return func() *cobra.Command {
		c := &cobra.Command{
			Use:   "phase [NAME] -f SPEC",
			Short: "Run one bootstrap phase alone, or list the phases of a spec",
			Long: `Without NAME, lists the phases the spec's bootstrap runs, in order. With
NAME, runs just that phase (kubeadm phases prepare the kubeadm configuration
first). The state file is neither consulted nor completed.`,
			Args: func(cmd *cobra.Command, args []string) error {
				if len(args) > 1 {
					return usagef("at most one phase name, got %q", args)
				}
				return nil
			},
			RunE: func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					l, err := loadSpec(o, f.file)
					if err != nil {
						return err
					}
					before, after := phases.HostPhases(host.Steps(l.Config), &host.Env{}, nil)
					w := phases.Bootstrap(l.Config, before, after)
					for _, p := range w.Phases {
						fmt.Fprintf(o.out, "%-24s %s\n", p.Name, p.Short)
					}
					return nil
				}
				return runBootstrap(cmd.Context(), o, f, args[0])
			},
		}
		f.bind(c, false)
		return c
	}()
}

// runBootstrap loads the spec and runs its workflow (or only one phase).
func runBootstrap(ctx context.Context, o *options, f *bootstrapFlags, only string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	data, err := readSpecBytes(o, f.file)
	if err != nil {
		return err
	}
	l, err := loadSpecBytes(o, data, f.file)
	if err != nil {
		return err
	}
	env := &host.Env{Root: "/", Log: o.log, Out: o.out}
	if !f.dryRun {
		sd := service.NewSystemd() // connects to D-Bus on first use
		defer sd.Close()
		env.Services = sd
	}
	before, after := phases.HostPhases(host.Steps(l.Config), env, f.skipPhases)
	w := phases.Bootstrap(l.Config, before, after)
	if err := w.CheckNames(f.skipPhases); err != nil {
		return &UsageError{Err: fmt.Errorf("--skip-phases: %w", err)}
	}
	if only != "" {
		if err := w.CheckNames([]string{only}); err != nil {
			return &UsageError{Err: err}
		}
	}
	if !f.dryRun {
		if err := version.CheckStamped(); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(data)
	d := &phases.Data{
		Config:     l.Config,
		SpecDigest: "sha256:" + hex.EncodeToString(sum[:]),
		Root:       "/",
		DryRun:     f.dryRun,
		WorkDir:    defaultWorkDir,
		Log:        o.log,
		Out:        o.out,
	}
	if f.dryRun {
		if d.WorkDir, err = dryRunDir(f.dryRunDir); err != nil {
			return err
		}
	}
	red := &lineRedactor{secrets: d.Secrets}
	d.KubeadmOutput = func(line string) { fmt.Fprintln(o.out, red.redact(line)) }
	obs := &consoleObserver{o: o, start: map[string]time.Time{}}
	failed, runErr := w.Run(ctx, d, obs, phases.RunOptions{Skip: f.skipPhases, Only: only})
	if f.dryRun {
		fmt.Fprintf(o.out, "dry run: files kubeadm would write are in %s\n", d.WorkDir)
	}
	if runErr != nil {
		class, hint := report.ClassOf(runErr)
		return &BootstrapFailedError{Phase: failed, Class: class, Hint: hint, Err: fmt.Errorf("%s", red.redact(runErr.Error()))}
	}
	return nil
}

// BootstrapFailedError is a bootstrap that ran and failed (exit code 1).
type BootstrapFailedError struct {
	Phase string
	Class report.Class
	Hint  string
	Err   error
}

func (e *BootstrapFailedError) Error() string {
	msg := fmt.Sprintf("phase %s failed (%s): %v", e.Phase, e.Class, e.Err)
	if e.Hint != "" {
		msg += "\nhint: " + e.Hint
	}
	return msg
}
func (e *BootstrapFailedError) Unwrap() error { return e.Err }

func dryRunDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "machineadm-dryrun-")
	}
	return dir, os.MkdirAll(dir, 0o700)
}

// consoleObserver prints one line per phase.
type consoleObserver struct {
	o     *options
	start map[string]time.Time
}

func (c *consoleObserver) PhaseStarted(name string) {
	c.start[name] = time.Now()
	fmt.Fprintf(c.o.out, "[machineadm] phase %s ...\n", name)
}

func (c *consoleObserver) PhaseFinished(name string, status phases.Status, msg string, err error) {
	d := ""
	if t, ok := c.start[name]; ok {
		d = " in " + time.Since(t).Round(time.Millisecond).String()
	}
	line := fmt.Sprintf("[machineadm] phase %s: %s%s", name, status, d)
	if msg != "" {
		line += " — " + msg
	}
	fmt.Fprintln(c.o.out, line)
}

// bootstrapTokenRE matches bootstrap tokens anywhere in a line.
var bootstrapTokenRE = regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`)

// lineRedactor removes known secret values and anything shaped like a
// bootstrap token from output lines.
type lineRedactor struct {
	secrets func() []string
}

func (r *lineRedactor) redact(line string) string {
	for _, s := range r.secrets() {
		if s != "" {
			line = strings.ReplaceAll(line, s, "<redacted>")
		}
	}
	return bootstrapTokenRE.ReplaceAllString(line, "<redacted>")
}
