// Package phases is machineadm's bootstrap workflow: an ordered list of
// named phases — host preparation, machineadm's own kubeadm-config phase,
// then kubeadm's init or join phases under kubeadm's names — each
// skippable by name and runnable alone, with a state file that makes a
// re-run after success a no-op and a re-run after a crash resume at the
// first phase that did not finish.
package phases

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm"
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

// Phase is one named step of the workflow.
type Phase struct {
	// Name is the phase name used by --skip-phases, `bootstrap phase NAME`
	// and the report. kubeadm's phases keep kubeadm's names.
	Name string
	// Short describes the phase in one line.
	Short string
	// Run performs the phase. It returns whether it changed anything and a
	// one-line message for the report (never secret).
	Run func(ctx context.Context, d *Data) (changed bool, message string, err error)
}

// Observer is told about each phase as it runs; the outcome report
// recorder implements it.
type Observer interface {
	// PhaseStarted is called before a phase runs.
	PhaseStarted(name string)
	// PhaseFinished is called after a phase ran or was skipped; err is set
	// for StatusFailed.
	PhaseFinished(name string, status Status, message string, err error)
}

// Data is what phases share for one run.
type Data struct {
	// Config is the validated hub spec.
	Config *machineadm.MachineBootstrapConfig
	// SpecDigest identifies the spec content ("sha256:<hex>"), for the
	// state file.
	SpecDigest string
	// Root is the root prefix for machineadm's own writes ("/" on a host).
	Root string
	// DryRun makes every phase plan instead of act: host steps print what
	// they would change, kubeadm runs in its dry-run mode, and all files go
	// to WorkDir.
	DryRun bool
	// WorkDir is machineadm's state directory: /var/lib/machineadm on a
	// host, a temporary directory in a dry run.
	WorkDir string
	// Log is the structured logger.
	Log *slog.Logger
	// Out receives console output: dry-run plans and kubeadm's output
	// (already redacted).
	Out io.Writer
	// KubeadmOutput receives each line kubeadm prints; set by the caller to
	// redact and record it.
	KubeadmOutput func(line string)

	kubeadm *kubeadmState
	// secrets are the secret inputs read by inputs-check, reused by
	// kubeadm-config (nil when inputs-check did not run in this process).
	secrets *kubeadm.Inputs
}

// Workflow is an ordered list of phases.
type Workflow struct {
	Phases []Phase
}

// Names returns the phase names in order.
func (w *Workflow) Names() []string {
	names := make([]string, 0, len(w.Phases))
	for _, p := range w.Phases {
		names = append(names, p.Name)
	}
	return names
}

// CheckNames returns an error naming any of names that is not a phase of
// the workflow.
func (w *Workflow) CheckNames(names []string) error {
	known := w.Names()
	var unknown []string
	for _, n := range names {
		if !slices.Contains(known, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown phase(s) %s; phases of this spec: %s", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return nil
}

// RunOptions select what a run does.
type RunOptions struct {
	// Skip names phases not to run; they are reported Skipped.
	Skip []string
	// Only, when set, runs just this phase (`bootstrap phase NAME`); the
	// others are not reported and the state file is not consulted.
	Only string
}

// Run runs the workflow's phases in order, stopping at the first failure,
// and reports each one to obs. It returns the failing phase's name and its
// error. A run whose state file shows the same spec already bootstrapped
// reports every phase Unchanged and returns nil; a run after an
// interrupted one skips the phases that completed.
func (w *Workflow) Run(ctx context.Context, d *Data, obs Observer, opts RunOptions) (string, error) {
	st := loadState(d)
	if opts.Only == "" && st.completedRun(d.SpecDigest) {
		for _, p := range w.Phases {
			obs.PhaseFinished(p.Name, StatusUnchanged, "already bootstrapped with this spec ("+st.FinishedAt+")", nil)
		}
		return "", nil
	}
	for _, p := range w.Phases {
		if opts.Only != "" && p.Name != opts.Only {
			continue
		}
		if slices.Contains(opts.Skip, p.Name) {
			obs.PhaseFinished(p.Name, StatusSkipped, "skipped by --skip-phases", nil)
			continue
		}
		if opts.Only == "" && st.completedPhase(d.SpecDigest, p.Name) {
			obs.PhaseFinished(p.Name, StatusSkipped, "completed by an earlier run of this spec", nil)
			continue
		}
		obs.PhaseStarted(p.Name)
		start := time.Now()
		d.Log.Info("phase started", "phase", p.Name)
		changed, msg, err := p.Run(ctx, d)
		dur := time.Since(start).Round(time.Millisecond)
		if err != nil {
			d.Log.Error("phase failed", "phase", p.Name, "duration", dur, "error", err)
			obs.PhaseFinished(p.Name, StatusFailed, msg, err)
			return p.Name, err
		}
		status := StatusSucceeded
		if !changed {
			status = StatusUnchanged
		}
		d.Log.Info("phase finished", "phase", p.Name, "status", status, "duration", dur)
		obs.PhaseFinished(p.Name, status, msg, nil)
		if err := st.markPhase(d, p.Name); err != nil {
			d.Log.Warn("could not record phase in the state file", "error", err)
		}
	}
	if opts.Only == "" {
		if err := st.markDone(d); err != nil {
			d.Log.Warn("could not record success in the state file", "error", err)
		}
	}
	return "", nil
}
