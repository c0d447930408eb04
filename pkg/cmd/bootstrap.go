package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/containerd"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/version"
)

// defaultWorkDir is machineadm's state directory on a host.
const defaultWorkDir = "/var/lib/machineadm"

type bootstrapFlags struct {
	file       string
	dryRun     bool
	dryRunDir  string
	skipPhases []string
	run        runFlags
	// dryRunDirSet records that --dry-run-dir was given, even empty.
	dryRunDirSet bool
}

func (f *bootstrapFlags) bind(c *cobra.Command, withSkip bool) {
	c.Flags().StringVarP(&f.file, "file", "f", "", "machine spec path, or - for standard input")
	c.Flags().BoolVar(&f.dryRun, "dry-run", false, "change nothing: host phases print their plan, kubeadm runs in its dry-run mode and writes to --dry-run-dir")
	c.Flags().StringVar(&f.dryRunDir, "dry-run-dir", "", "directory for a dry run's files (default: a new temporary directory, printed at the end)")
	if withSkip {
		c.Flags().StringSliceVar(&f.skipPhases, "skip-phases", nil, "phases not to run, by name (list them with 'machineadm bootstrap phase -f SPEC')")
	}
	f.run.bind(c)
}

func newBootstrapCommand(o *options) *cobra.Command {
	f := &bootstrapFlags{}
	c := &cobra.Command{
		Use:   "bootstrap -f SPEC",
		Short: "Prepare this host and create or join a cluster with the embedded kubeadm",
		Long: `Runs the bootstrap workflow for the machine spec: inputs-check (the spec's
secret files and CA set are read and checked before anything changes), the
host preparation phases, machineadm's kubeadm-config phase, then kubeadm's
init phases (action Init) or join phases (action Join) in-process, each as a
named phase, and last the extra static pods. A failure names
the phase that failed. Running again after success changes nothing; running
again after an interrupted run resumes at the first phase that did not finish.

Exit codes: 0 success, 1 the bootstrap failed (see the report), 2 invalid spec
or usage (nothing was changed).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.dryRunDirSet = cmd.Flags().Changed("dry-run-dir")
			return runBootstrap(cmd.Context(), o, f, "")
		},
	}
	f.bind(c, true)
	c.AddCommand(newBootstrapPhaseCommand(o))
	return c
}

func newBootstrapPhaseCommand(o *options) *cobra.Command {
	f := &bootstrapFlags{}
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
}

// runBootstrap loads the spec and runs its workflow (or only one phase),
// recording the run in the outcome report.
func runBootstrap(ctx context.Context, o *options, f *bootstrapFlags, only string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if (f.dryRunDirSet || f.dryRunDir != "") && !f.dryRun {
		return usagef("--dry-run-dir needs --dry-run")
	}
	if err := requireFile(f.file); err != nil {
		return err
	}
	workDir := f.run.workDir
	if f.dryRun {
		var err error
		if workDir, err = dryRunDir(f.dryRunDir); err != nil {
			return &UsageError{Err: fmt.Errorf("--dry-run-dir: %w", err)}
		}
	}
	data, loadErr := readSpecBytes(o, f.file)
	var l *spec.Loaded
	if loadErr == nil {
		l, loadErr = spec.Load(data, f.file)
	}
	var cfg *machineadm.MachineBootstrapConfig
	if loadErr == nil {
		cfg = l.Config
		// What the embedded kubeadm would refuse is bad input too.
		_, loadErr = translateChecked(cfg, f.file)
	}
	r := startRun(o, "bootstrap", cfg, &f.run, f.dryRun, workDir)
	if loadErr != nil {
		return r.invalid(loadErr)
	}
	for _, w := range l.Warnings {
		o.log.Warn("spec warning", "field", w.Field, "message", w.Message)
	}

	env := &host.Env{Root: "/", Log: o.log, Out: o.out, CRIReady: criReady(cfg)}
	if !f.dryRun {
		sd := service.NewSystemd() // connects to D-Bus on first use
		defer sd.Close()
		env.Services = sd
	}
	before, after := phases.HostPhases(host.Steps(cfg), env, f.skipPhases)
	w := phases.Bootstrap(cfg, before, after)
	if err := w.CheckNames(f.skipPhases); err != nil {
		return r.invalid(&UsageError{Err: fmt.Errorf("--skip-phases: %w", err)})
	}
	if only != "" {
		if err := w.CheckNames([]string{only}); err != nil {
			return r.invalid(&UsageError{Err: err})
		}
	}
	if !f.dryRun {
		if err := version.CheckStamped(); err != nil {
			return r.failed(err)
		}
	}
	sum := sha256.Sum256(data)
	d := &phases.Data{
		Config:     cfg,
		SpecDigest: "sha256:" + hex.EncodeToString(sum[:]),
		Root:       "/",
		DryRun:     f.dryRun,
		WorkDir:    workDir,
		Log:        o.log,
		Out:        o.out,
	}
	var outputDone func()
	d.KubeadmOutput, outputDone = r.kubeadmOutput(o.out)
	defer outputDone()
	err := r.workflow(ctx, "bootstrap", w, d, phases.RunOptions{Skip: f.skipPhases, Only: only})
	if f.dryRun {
		fmt.Fprintf(o.out, "dry run: files kubeadm would write and the report are in %s\n", workDir)
	}
	return err
}

// dryRunDir returns the dry run's directory, absolute (kubeadm wants
// absolute paths): a new temporary directory when dir is "", else dir,
// created when missing.
func dryRunDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "machineadm-dryrun-")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return abs, os.MkdirAll(abs, 0o700)
}

// criReadyTimeout bounds the wait for containerd's CRI after a restart.
const criReadyTimeout = 2 * time.Minute

// criReady waits for the spec's CRI endpoint to report RuntimeReady.
func criReady(cfg *machineadm.MachineBootstrapConfig) func(context.Context) error {
	return func(ctx context.Context) error {
		return containerd.WaitCRIReady(ctx, cfg.Spec.Node.CRISocket, criReadyTimeout)
	}
}
