// Package session is one run of a machineadm workflow (bootstrap,
// prepare, and later commands that change a host): it holds the run lock
// (one real run at a time on a host, lock.go), reads the spec source,
// builds the redactor from the spec's secrets, records the run in the
// outcome report through its writers (with the dry-run policy: a dry run
// reports into its own directory, never to the console, sentinel or URL),
// watches SIGTERM/SIGINT, classifies failures that happen outside a phase,
// runs the workflow of pkg/phases with a console observer, and maps errors
// to exit codes. pkg/cmd only parses flags and calls Run. What the
// config commands compute is pkg/cmd/configcmd's; `unseal --check`
// (UnsealCheck) stays here because its verdict must be a run's: it loads,
// opens and checks the spec with the run's own steps (the node name as
// phases choose it), which the command tree may not import.
package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/containerd"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/upgrade"
	"github.com/machineadm/machineadm/pkg/version"
)

// Command names a workflow the session can run.
type Command string

// The commands.
const (
	// Bootstrap prepares the host and runs kubeadm (`machineadm bootstrap`).
	Bootstrap Command = "bootstrap"
	// Prepare runs the host group alone (`machineadm prepare`).
	Prepare Command = "prepare"
	// Upgrade brings a bootstrapped node to a new spec (`machineadm
	// upgrade`, docs/upgrade.md).
	Upgrade Command = "upgrade"
)

// Options are what one run is asked to do.
type Options struct {
	// Command is Bootstrap, Prepare or Upgrade.
	Command Command
	// SpecFile is the spec's path, or "-" for In.
	SpecFile string
	// In is standard input. Out receives console output (redacted).
	In  io.Reader
	Out io.Writer
	// Log is the structured logger; the session wraps it to redact.
	Log *slog.Logger
	// DryRun plans without changing the host.
	DryRun bool
	// DryRunDir is a dry run's directory ("" with DryRunDirSet false: a new
	// temporary directory). Only with DryRun.
	DryRunDir    string
	DryRunDirSet bool
	// Root is the machine's root directory: "/" for bootstrap; prepare's
	// --root (an image: files only, nothing live).
	Root string
	// ReportRoot is prepended to the report writers' paths (bootstrap's
	// hidden --report-root). Prepare reports under Root.
	ReportRoot string
	// WorkDir replaces translate.DefaultWorkDir (the state file, kubeadm's
	// configuration). Ignored in a dry run, which works in its directory.
	WorkDir string
	// Skip names phases not to run (--skip-phases); Only runs one phase
	// (`bootstrap phase NAME`).
	Skip []string
	Only string
	// IdentityFile is the machine's identity for a sealed spec (--identity;
	// default seal.DefaultIdentityFile, /etc/machineadm/identity).
	IdentityFile string
	// Verbose shows the full output of kubeadm on Out (-v); it always goes
	// to the log file and the report's log tail.
	Verbose bool
	// LogFile writes the structured log and kubeadm's output to
	// LogFileName beside the outcome report (bootstrap and prepare).
	LogFile bool
	// SkipDrain, DrainTimeout and Kubeconfig are upgrade's --skip-drain,
	// --drain-timeout (0: phases.DefaultDrainTimeout) and --kubeconfig
	// (the drain's credential; "": kubeadm's admin.conf).
	SkipDrain    bool
	DrainTimeout time.Duration
	Kubeconfig   string
}

// Workflow returns the workflow of command for cfg.
func Workflow(command Command, cfg *machineadm.MachineBootstrapConfig) *phases.Workflow {
	switch command {
	case Prepare:
		return phases.Prepare(cfg)
	case Upgrade:
		return phases.Upgrade(cfg)
	}
	return phases.Bootstrap(cfg)
}

// Run runs one workflow and records it: bad input (usage, an invalid spec,
// a configuration kubeadm refuses, an unknown phase name) is recorded as
// InvalidSpec and returned for exit code 2, with nothing changed; a failed
// phase returns a *RunFailedError (exit code 1) after the report was
// written.
//
// A real run holds the run lock of its work directory (LockFileName) from
// before it records anything until it returns; when another run holds it,
// Run returns a *BusyError (exit code 3) having done and written nothing.
// A lock that cannot be taken (a symbolic link at its path, an unwritable
// directory) is an error (exit code 1), also with nothing written. A dry
// run takes no lock. Usage errors found before the spec is read (no -f,
// --dry-run-dir without --dry-run) are returned before the lock.
func Run(ctx context.Context, o Options) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Root == "" {
		o.Root = "/"
	}
	if (o.DryRunDirSet || o.DryRunDir != "") && !o.DryRun {
		return Usagef("--dry-run-dir needs --dry-run")
	}
	workDir := o.WorkDir
	if workDir == "" {
		workDir = translate.DefaultWorkDir
	}
	// The node's own work directory, where an upgrade finds the applied
	// spec even in a dry run (which works in a directory of its own).
	nodeWorkDir := workDir
	if o.SpecFile == "" {
		// A command-line typo: nothing ran, and no report replaces the
		// last run's.
		return Usagef("a machine spec is required: -f SPEC (a path, or - for standard input)")
	}
	// A spec that cannot be read is recorded: on a first boot it is the
	// failure an operator needs to see.
	data, readErr := ReadSpec(o.In, o.SpecFile)
	reportRoot := o.ReportRoot
	if o.Command == Prepare {
		reportRoot = o.Root
	}
	if o.DryRun {
		var err error
		if workDir, err = dryRunDir(o.DryRunDir, o.Command); err != nil {
			return &UsageError{Err: fmt.Errorf("--dry-run-dir: %w", err)}
		}
		reportRoot = workDir
	}
	var l *spec.Loaded
	var sealed []byte
	var sealedItems []string
	loadErr := readErr
	if loadErr == nil {
		l, sealed, sealedItems, loadErr = LoadSpecDoc(data, o.SpecFile)
	}
	var cfg *machineadm.MachineBootstrapConfig
	if loadErr == nil {
		cfg = l.Config
		// A spec for another OS (spec.os) is bad input, refused before
		// anything else; its paths are another OS's, so the report goes
		// where a spec that cannot be used sends it (cfg nil).
		if fe := host.OSMismatch(cfg); fe != nil {
			loadErr, cfg = &spec.InvalidSpecError{Source: o.SpecFile, Errors: field.ErrorList{fe}}, nil
		} else if o.Command == Bootstrap || o.Command == Upgrade {
			_, loadErr = translate.CheckSpec(cfg, o.SpecFile)
		}
	}
	var w *phases.Workflow
	badInput := loadErr
	if badInput == nil {
		w = Workflow(o.Command, cfg)
		badInput = checkPhaseNames(w, o)
	}
	// The run lock, before anything is recorded (lock.go). A run with bad
	// input creates no lock file: it changes nothing but its report.
	if !o.DryRun {
		dir, err := lockDir(o, workDir)
		if err != nil {
			return fmt.Errorf("run lock: %w", err)
		}
		lock, err := acquireLock(dir, badInput == nil, LockInfo{PID: os.Getpid(), Command: lockCommand(o)})
		if err != nil {
			return err
		}
		defer lock.release()
	}
	rec := startRecord(o, cfg, reportRoot)
	defer func() { rec.footer(o, cfg, workDir, err) }()
	if loadErr != nil {
		return rec.invalid(loadErr)
	}
	for _, warn := range l.Warnings {
		rec.log.Warn("spec warning", "field", warn.Field, "message", warn.Message)
	}
	if badInput != nil {
		return rec.invalid(badInput)
	}
	if (o.Command == Bootstrap || o.Command == Upgrade) && !o.DryRun {
		if err := version.CheckStamped(); err != nil {
			return rec.failed(err)
		}
	}
	env, closeEnv := hostEnv(o, cfg, rec)
	defer closeEnv()
	// Until the envelope is opened, its places are empty in cfg: the host
	// steps refuse to write them (defence in depth; OpenSealed below
	// opens it before any phase).
	for _, p := range sealedItems {
		if env.Withheld == nil {
			env.Withheld = map[string]bool{}
		}
		env.Withheld[p] = true
	}
	sum := sha256.Sum256(data)
	var specDoc []byte
	if sealed != nil {
		// The envelope opens only beside the clear spec it was sealed
		// with (its digest is in every item's additional data).
		specDoc, _, _ = SplitSealed(data, o.SpecFile) // split once already
	}
	d := &phases.Data{
		Config:     cfg,
		SpecDigest: "sha256:" + hex.EncodeToString(sum[:]),
		Root:       o.Root,
		DryRun:     o.DryRun,
		WorkDir:    workDir,
		Log:        rec.log,
		Out:        rec.out,
		Host:       env,
		Sealed:     sealed,
		SpecDoc:    specDoc,
		Identity:   o.IdentityFile,
		AddSecrets: rec.red.Add,
	}
	// A sealed spec is opened before any phase of any command (prepare,
	// one phase, a resumed bootstrap): no phase may meet its emptied
	// places. An envelope this machine cannot open refuses the run (exit
	// code 2) with nothing changed.
	if sealed != nil {
		if err := phases.OpenSealed(d); err != nil {
			return rec.refused(&SealedError{Identity: phases.IdentityPath(d), Err: err})
		}
	}
	// Under a compliance profile, encryption at rest defaults to the
	// cluster's key from the CA set; a control plane with no key is
	// refused (exit code 2) before any phase. Not for prepare: an image
	// is prepared before the CA set is delivered, and bootstrap writes
	// the encryption configuration.
	if o.Command == Bootstrap || o.Command == Upgrade {
		if err := phases.DefaultEncryption(d); err != nil {
			return rec.invalid(err)
		}
	}
	// A bootstrap of another spec than the node runs is refused.
	if o.Command == Bootstrap && o.Only == "" {
		if err := checkRebootstrap(d, nodeWorkDir); err != nil {
			return rec.invalid(err)
		}
	}
	// An upgrade plans from the node's applied spec: a change that cannot
	// be made in place refuses it (exit code 2) with nothing changed.
	if o.Command == Upgrade {
		u, err := planUpgrade(o, d, nodeWorkDir)
		if err != nil {
			return rec.invalid(err)
		}
		d.Upgrade, d.StateFile = u, upgrade.JournalFile
		d.SpecDigest = upgrade.JournalKey(u.Record.SpecDigest, u.SpecDigest)
		rec.rec.SetUpgrade(u.Plan.From, u.Plan.To, changedPaths(u.Plan))
	}
	// The journal decides which phases run: one that is not machineadm's
	// own file (a link, a hard link, a FIFO) refuses the run.
	if (o.Command == Bootstrap || o.Command == Upgrade) && o.Only == "" {
		if err := phases.CheckJournal(d); err != nil {
			return rec.failed(err)
		}
	}
	var outputDone func()
	d.KubeadmOutput, outputDone = rec.kubeadmOutput()
	defer outputDone()
	if err := rec.workflow(ctx, w, d, phases.RunOptions{Skip: o.Skip, Only: o.Only}); err != nil {
		return err
	}
	// A finished bootstrap (also one that found the node bootstrapped with
	// this spec) records the applied spec, which `machineadm upgrade`
	// plans from.
	if o.Command == Bootstrap && o.Only == "" && !o.DryRun {
		if _, err := phases.RecordBootstrap(d); err != nil {
			rec.log.Warn("the applied spec could not be recorded; `machineadm upgrade` will not find it", "error", err)
		}
	}
	return nil
}

// checkPhaseNames checks the phase names of --skip-phases and of
// `bootstrap phase NAME` against w: an unknown one is a *UsageError.
func checkPhaseNames(w *phases.Workflow, o Options) error {
	if err := w.CheckNames(o.Skip); err != nil {
		return &UsageError{Err: fmt.Errorf("--skip-phases: %w", err)}
	}
	if o.Command == Upgrade && slices.Contains(o.Skip, upgrade.PhaseRecord) {
		// The upgrade's journal marks a run finished even with a phase
		// skipped, so a run without the record would never write it: every
		// later run of the same upgrade reports it finished.
		return Usagef("--skip-phases: %s cannot be skipped: it records the new spec as the node's applied spec, which a later run of this upgrade would not write", upgrade.PhaseRecord)
	}
	if o.Only != "" {
		if err := w.CheckNames([]string{o.Only}); err != nil {
			return &UsageError{Err: err}
		}
	}
	return nil
}

// hostEnv is where the host steps run: the machine's root, its service
// manager (systemd over D-Bus, connected on first use) unless the run is
// a dry run or an offline image (prepare --root), and the wait for
// containerd's CRI after a restart.
func hostEnv(o Options, cfg *machineadm.MachineBootstrapConfig, rec *record) (*host.Env, func()) {
	env := &host.Env{Root: o.Root, Log: rec.log, Out: rec.out, Offline: o.Root != "/"}
	if o.DryRun || env.Offline {
		return env, func() {}
	}
	env.CRIReady = criReady(cfg)
	sd := service.NewSystemd()
	env.Services = sd
	return env, func() { sd.Close() }
}

// footer ends the console output of a run, after the summary: for a dry
// run what it did and did not do, and where its files are; for a failed
// run where the full log is.
func (r *record) footer(o Options, cfg *machineadm.MachineBootstrapConfig, workDir string, err error) {
	defer func() { _ = r.out.Flush() }()
	var rf *RunFailedError
	failed := errors.As(err, &rf)
	if !o.DryRun {
		if failed && r.logPath() != "" {
			fmt.Fprintf(r.out, "log: %s (machineadm's log and kubeadm's full output)\n", r.logPath())
		}
		return
	}
	if err != nil {
		where := ""
		if failed && rf.Phase != "" {
			where = " in phase " + rf.Phase
		}
		if (failed && rf.DryRunOnly) || errors.As(err, new(*phases.DryRunOnlyError)) {
			// The dry run's own stand-in failed, not the spec or the host.
			fmt.Fprintf(r.out, "dry run: FAILED%s: the dry run itself could not run (see the error above), which tells nothing about a real run; nothing on this host was changed\n", where)
			return
		}
		fmt.Fprintf(r.out, "dry run: FAILED%s; a real run would fail there too (see the error above); nothing on this host was changed\n", where)
		return
	}
	fmt.Fprintf(r.out, "dry run: nothing on this host was changed; what the dry run wrote is under %s\n", workDir)
	if o.Command == Bootstrap && cfg != nil {
		if cfg.Spec.Action == machineadm.ActionJoin && cfg.Spec.Join != nil {
			fmt.Fprintf(r.out, "dry run: no cluster was contacted; a real run would join the cluster at %s\n", cfg.Spec.Join.APIServerEndpoint)
		}
		certs := ""
		if cfg.Spec.ControlPlane != nil {
			certs = ", the certificates in " + filepath.Join(workDir, "pki")
		}
		fmt.Fprintf(r.out, "dry run: files kubeadm would write are in %s%s\n", filepath.Join(workDir, "kubeadm"), certs)
		if p := r.logPath(); p != "" {
			fmt.Fprintf(r.out, "dry run: kubeadm's full output is in %s (-v prints it here)\n", p)
		}
	}
}

// DryRunMarker is the file that marks a directory as a dry run's: every
// dry run writes it first into its directory. A --dry-run-dir that already
// holds files is used only when it has one, so that a dry run never writes
// among (or, in its kubeadm-config phase, replaces) files that are not an
// earlier dry run's: a user's own pki directory, or /etc/kubernetes.
const DryRunMarker = ".machineadm-dry-run"

// dryRunDir returns the dry run's directory, absolute (kubeadm wants
// absolute paths): a new temporary directory when dir is "", else dir,
// created (0700) when missing. An existing dir must be empty or an
// earlier dry run's (it holds DryRunMarker); anything else is an error,
// with nothing written. The directory it returns holds DryRunMarker.
func dryRunDir(dir string, c Command) (string, error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "machineadm-"+string(c)+"-dryrun-")
		if err != nil {
			return "", err
		}
		return tmp, markDryRunDir(tmp)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", err
	}
	if fi, err := os.Lstat(filepath.Join(abs, DryRunMarker)); err == nil && fi.Mode().IsRegular() {
		return abs, nil
	}
	empty, err := emptyDir(abs)
	if err != nil {
		return "", err
	}
	if !empty {
		return "", fmt.Errorf("%s holds files but no earlier dry run (no %s in it): name a new or empty directory", abs, DryRunMarker)
	}
	return abs, markDryRunDir(abs)
}

// markDryRunDir writes DryRunMarker into dir.
func markDryRunDir(dir string) error {
	return os.WriteFile(filepath.Join(dir, DryRunMarker), []byte("a directory of machineadm's dry runs: each one replaces what the previous one wrote here\n"), 0o600)
}

// emptyDir reports whether the directory dir has no entries (reading one
// name at most).
func emptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return len(names) == 0, err
}

// criReadyTimeout bounds the wait for containerd's CRI after a restart.
const criReadyTimeout = 2 * time.Minute

// criReady waits, at most criReadyTimeout, for the spec's CRI endpoint to
// report RuntimeReady.
func criReady(cfg *machineadm.MachineBootstrapConfig) func(context.Context) error {
	return func(ctx context.Context) error {
		return containerd.WaitCRIReady(ctx, cfg.Spec.Node.CRISocket, criReadyTimeout)
	}
}
