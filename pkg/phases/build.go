package phases

import (
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// Bootstrap returns the bootstrap workflow for a validated hub spec:
// inputs-check (secret files and CA set read and checked), the host group
// (host-check and the host-preparation steps), kubeadm-config, kubeadm's
// init (action Init) or join (action Join) phase tree as far as it applies
// to the spec, then the host steps that must follow kubeadm (static-pods).
// A join waits for a signed cluster-info (wait-cluster-info) right before
// kubeadm's preflight.
func Bootstrap(cfg *machineadm.MachineBootstrapConfig) *Workflow {
	before, after := HostGroup(cfg)
	w := &Workflow{Command: "bootstrap", State: true, Phases: []Phase{InputsCheck()}}
	w.Phases = append(w.Phases, before...)
	w.Phases = append(w.Phases, KubeadmConfigPhase())
	if cfg.Spec.Action == machineadm.ActionJoin {
		w.Phases = append(w.Phases, WaitClusterInfoPhase())
	}
	w.Phases = append(w.Phases, KubeadmPhases(cfg)...)
	w.Phases = append(w.Phases, after...)
	w.Phases = append(w.Phases, CompliancePhase(cfg)...)
	w.Absent = func(name string) string { return absentKubeadmPhase(cfg, name) }
	w.Confirm = func(d *Data) *Unconfirmed {
		if upgradedSince(d) {
			// The host is the upgrade's now: converging it back to the
			// first spec would undo the upgrade.
			return nil
		}
		return confirmBootstrap(d)
	}
	w.Done = upgradedTo
	return w
}

// upgradedSince says whether `machineadm upgrade` recorded another spec
// on this node after its bootstrap (the applied-spec record is an
// upgrade's). Not in a dry run. Here and in upgradedTo only a record
// that passes the owner and mode check (ReadRecord) counts: either skips
// the look at the host a finished journal gets (confirmBootstrap), so a
// record others may have written (forged) made a blank host's bootstrap
// report Succeeded and write the sentinel. A bootstrap with such a record
// of an upgrade is refused before its phases (session's checkRebootstrap).
func upgradedSince(d *Data) bool {
	if d.DryRun {
		return false
	}
	r, err := upgrade.ReadRecord(d.WorkDir)
	return err == nil && r.Command == "upgrade"
}

// upgradedTo says, for a bootstrap with the spec a `machineadm upgrade`
// applied last (the record's digest is this spec's: an operator or boot
// unit that keeps the spec file current), that the node already runs it;
// "" otherwise. A bootstrap of that spec changes nothing then.
func upgradedTo(d *Data) string {
	if d.DryRun {
		return ""
	}
	r, err := upgrade.ReadRecord(d.WorkDir)
	if err != nil || r.Command != "upgrade" || r.SpecDigest != d.SpecDigest {
		return ""
	}
	return "the node runs this spec, applied by machineadm upgrade (" + r.AppliedAt + ")"
}

// absentKubeadmPhase says why kubeadm's phase name is not in cfg's
// bootstrap tree: machineadm never runs it, or its condition (kubeadm's
// RunIf, or its parent's) does not hold for cfg, or it belongs to the
// other action (init, join). "" when name is in neither kubeadm table.
func absentKubeadmPhase(cfg *machineadm.MachineBootstrapConfig, name string) string {
	row, ok := run.Lookup(cfg.Spec.Action, name)
	other := machineadm.ActionJoin
	if cfg.Spec.Action == machineadm.ActionJoin {
		other = machineadm.ActionInit
	}
	switch {
	case !ok:
		if _, ok := run.Lookup(other, name); ok {
			return "a phase of kubeadm " + strings.ToLower(string(other)) + "; this spec's action is " + string(cfg.Spec.Action)
		}
		return ""
	case row.Never:
		return "a kubeadm phase machineadm never runs: " + row.Short
	}
	return "a kubeadm phase that does not apply to this spec"
}

// Prepare returns the `machineadm prepare` workflow: the host group of
// Bootstrap's tree alone, in the same order, with the same phases.
func Prepare(cfg *machineadm.MachineBootstrapConfig) *Workflow {
	before, after := HostGroup(cfg)
	return &Workflow{Command: "prepare", Phases: append(before, after...)}
}

// KubeadmPhases returns kubeadm's phase tree for cfg (run.PhasesFor:
// the rows whose condition holds for the spec), each row a phase under
// kubeadm's name, sub-phases nested under their parents.
func KubeadmPhases(cfg *machineadm.MachineBootstrapConfig) []Phase {
	var top []Phase
	// Rows come parents first, so a child's parent is always already placed.
	for _, row := range run.PhasesFor(cfg) {
		parts := strings.Split(row.Name, "/")
		list := &top
		for _, part := range parts[:len(parts)-1] {
			for i := range *list {
				if (*list)[i].Name == part {
					list = &(*list)[i].Phases
					break
				}
			}
		}
		*list = append(*list, rowPhase(cfg, parts[len(parts)-1], row))
	}
	// A row with sub-phases is a parent: kubeadm runs its own work, if
	// any, with each child.
	var parents func(ps []Phase)
	parents = func(ps []Phase) {
		for i := range ps {
			if len(ps[i].Phases) > 0 {
				ps[i].Run = nil
				parents(ps[i].Phases)
			}
		}
	}
	parents(top)
	return top
}

// HostGroup returns the host-preparation phases of cfg: host-check, then
// one phase per host step of this OS (host.Steps: one per registered
// concern, pkg/host/builtins). Steps marked AfterKubeadm
// (static-pods: kubeadm's preflight wants an empty manifest directory) are
// returned in after.
func HostGroup(cfg *machineadm.MachineBootstrapConfig) (before, after []Phase) {
	steps := hostSteps(cfg)
	before = append(before, hostCheckPhase(steps))
	for _, s := range steps {
		if s.AfterKubeadm {
			after = append(after, hostPhase(s))
		} else {
			before = append(before, hostPhase(s))
		}
	}
	return before, after
}
