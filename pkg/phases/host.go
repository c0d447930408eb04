package phases

import (
	"context"
	"errors"
	"strings"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
)

// HostCheckPhase is the name of the phase that checks every host step's
// inputs before any of them writes.
const HostCheckPhase = "host-check"

// errNoHost is a host phase run without Data.Host: a machineadm bug.
var errNoHost = errors.New("no host environment for the host phases")

// hostCheckPhase runs every step's Check (fetch and verify remote files,
// look up sysctl keys and owners, render containerd's files) for the steps
// that are not skipped, so that a bad input anywhere stops the run before
// anything is written.
func hostCheckPhase(steps []host.Step) Phase {
	return Phase{
		Name:       HostCheckPhase,
		Short:      "Check host-preparation inputs (remote files, owners, sysctl keys); change nothing",
		Class:      errclass.HostPreparationFailed,
		Check:      true,
		reconverge: true,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			if d.Host == nil {
				return Result{}, errclass.New(errclass.Internal, "", errNoHost)
			}
			d.Host.DryRun = d.DryRun
			var run []host.Step
			for _, s := range steps {
				if !d.opts.Skipped(s.Name) {
					run = append(run, s)
				}
			}
			return Result{Message: "checked " + strings.Join(host.Names(run), ", ")}, host.Check(ctx, d.Host, run)
		},
	}
}

// hostPhase wraps one host-preparation step as a phase; its failures carry
// the class the step gave them (errclass), HostPreparationFailed otherwise.
func hostPhase(s host.Step) Phase {
	return Phase{
		Name:       s.Name,
		Short:      s.Short,
		Class:      s.Class,
		reconverge: true,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			if d.Host == nil {
				return Result{}, errclass.New(errclass.Internal, "", errNoHost)
			}
			d.Host.DryRun = d.DryRun
			res, err := s.Apply(ctx, d.Host)
			// Notes (effective sysctl values) follow the changes.
			// Warnings are shown with the changes, too.
			changes := append(res.Changes, res.Notes...)
			for _, w := range res.Warnings {
				changes = append(changes, "warning: "+w)
			}
			return Result{Changed: res.Changed, Changes: changes, Sysctl: res.Sysctl, Warnings: res.Warnings}, err
		},
	}
}

// releaseHost frees what the host steps' checks kept that no phase
// applied (a run that failed or stopped before the files step): the
// files step's staged content (Workflow.Run calls it when the run ends).
func (d *Data) releaseHost() {
	if d.Host != nil {
		d.Host.Release()
	}
}
