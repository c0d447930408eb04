package session

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/upgrade"
	"github.com/machineadm/machineadm/pkg/version"
)

// planUpgrade reads the node's applied spec from workDir and plans the
// upgrade to d.Config (opened, when sealed). A node without a record is
// a *UsageError, and so is a record that cannot be used; a plan with a
// refused change an *spec.InvalidSpecError naming each refused field and
// why, with a hint about the change (errclass). All: exit code 2, nothing
// changed.
func planUpgrade(o Options, d *phases.Data, workDir string) (*phases.UpgradeRun, error) {
	r, err := upgrade.ReadRecord(workDir)
	if errors.Is(err, upgrade.ErrNoRecord) {
		// Not a command-line mistake: the hint says what to run first.
		return nil, &UsageError{Err: errclass.Errorf(errclass.InvalidSpec,
			"run `machineadm bootstrap -f SPEC` once with the spec this node was bootstrapped with (it changes nothing on a bootstrapped node and records the spec), then the upgrade",
			"this node has no applied-spec record (%v): `machineadm upgrade` works on a node bootstrapped by a machineadm that records its spec; run `machineadm bootstrap -f SPEC` once with the spec the node was bootstrapped with, which changes nothing on a bootstrapped node and records it", err)}
	}
	if err != nil {
		hint := recordHint
		if errors.Is(err, upgrade.ErrRecordAccess) {
			hint = recordAccessHint
		}
		return nil, badRecord(hint, "the node's applied-spec record cannot be used: %v", err)
	}
	snap, err := upgrade.Snapshot(d.Config, r.Key)
	if err != nil {
		return nil, fmt.Errorf("applied-spec record: %w", err)
	}
	p, err := upgrade.Compute(r.Spec, snap, upgrade.Options{KubeadmVersion: version.Get().Kubernetes})
	if err != nil {
		return nil, badRecord(recordHint, "the node's applied-spec record cannot be compared: %v", err)
	}
	if errs := p.Errors(); len(errs) > 0 {
		// The spec is valid on its own (config validate says so): the
		// hint is about the change, not about the spec.
		return nil, errclass.New(errclass.InvalidSpec, refusedHint, &spec.InvalidSpecError{Source: o.SpecFile, Errors: errs})
	}
	return &phases.UpgradeRun{
		Plan: p, Record: r, SpecDigest: d.SpecDigest,
		SkipDrain: o.SkipDrain, DrainTimeout: o.DrainTimeout, Kubeconfig: o.Kubeconfig,
	}, nil
}

// badRecord is the error of a record that cannot be used: a *UsageError
// (exit code 2, nothing changed) that says what to do about it (hint:
// recordHint, or recordAccessHint for one refused for its owner or mode
// alone), in its hint and in its message too: a usage error does not
// replace the last run's report, whose summary would print the hint. Not
// a command-line mistake: --help would not help.
func badRecord(hint, format string, args ...any) error {
	return &UsageError{Err: errclass.Errorf(errclass.InvalidSpec, hint, format+"; "+hint, args...)}
}

// recordHint says what to do about a record that cannot be used.
const recordHint = "check who changed the record, remove it, then run `machineadm bootstrap -f SPEC` once with the spec the node runs: it records the spec again"

// recordAccessHint says what to do about a record whose owner or mode
// let someone else change it: its content may still be machineadm's, and
// removing it would lose the spec the node runs.
const recordAccessHint = "check who changed the record's owner or mode and whether its spec is the one the node runs; if it is, give it back to root with mode 0600 (chown root:root FILE && chmod 0600 FILE) and run the upgrade again; if not, remove it and run `machineadm bootstrap -f SPEC` once with the spec the node runs"

// refusedHint is the hint of an upgrade refused for a change that cannot
// be made in place.
const refusedHint = "keep the refused fields as the node has them (docs/upgrade.md lists what changes in place); to change one, replace the machine or bootstrap it afresh"

// changedPaths are the plan's changed fields, for the report.
func changedPaths(p *upgrade.Plan) []string {
	var out []string
	for _, c := range p.Changes {
		out = append(out, c.Path)
	}
	return out
}

// checkRebootstrap refuses a bootstrap of a spec other than the one this
// node runs: the work directory workDir holds an applied-spec record of
// another spec, and bootstrap's state file is not about this spec either
// (a bootstrap of it finished or under way). Such a bootstrap would start
// over on a bootstrapped node until kubeadm's preflight refused it. The
// error is a *UsageError (exit code 2, nothing changed) pointing at
// `machineadm upgrade`. A record others may have written counts here
// (upgrade.ReadRecordAnyOwner): it can only refuse the bootstrap. One of
// an upgrade refuses every bootstrap: trusted, it would make a bootstrap
// of its spec report Succeeded without a look at the host (phases'
// upgradedTo) and a rerun of the spec before skip the host's look
// (upgradedSince), which whoever may write it could forge; ignored, that
// rerun would undo the upgrade it may tell of.
func checkRebootstrap(d *phases.Data, workDir string) error {
	r, err := upgrade.ReadRecordAnyOwner(workDir)
	if err != nil {
		return nil
	}
	if _, err := upgrade.ReadRecord(workDir); err != nil && r.Command == "upgrade" {
		return Usagef("the node's applied-spec record says machineadm upgrade applied a spec, but it cannot be trusted: %v; if machineadm wrote it, make it root-owned with mode 0600 and run again, otherwise reset this machine and remove it", err)
	}
	if r.SpecDigest == d.SpecDigest {
		return nil
	}
	probe := *d
	probe.WorkDir = workDir
	if phases.JournalSpec(&probe) == d.SpecDigest {
		return nil
	}
	return Usagef("this node runs another spec (%s, applied by machineadm %s at %s): a changed spec is applied with `machineadm upgrade -f SPEC`; to bootstrap this machine afresh, reset it and remove %s first",
		r.SpecDigest, r.Command, r.AppliedAt, filepath.Join(workDir, upgrade.RecordFile))
}
