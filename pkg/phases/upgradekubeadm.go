package phases

import (
	"context"
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// kubeadmUpgradePhase is kubeadm's `upgrade apply` (the first control
// plane) or `upgrade node` (every other node), each of its phases a
// sub-phase under kubeadm's name.
func kubeadmUpgradePhase(cfg *machineadm.MachineBootstrapConfig) Phase {
	verb := "node"
	if FirstControlPlane(cfg) {
		verb = "apply"
	}
	p := Phase{Name: upgrade.PhaseKubeadm, Short: "kubeadm upgrade " + verb + "'s phases, in-process", Class: errclass.ControlPlaneUnhealthy}
	for _, k := range KubeadmUpgradePhases(verb) {
		leaf := kubeadmUpgradeLeaf(k)
		if n := len(p.Phases); n > 0 && len(leaf.Phases) > 0 && p.Phases[n-1].Name == leaf.Name {
			// A sibling of the previous sub-phase (addon/kube-proxy
			// after addon/coredns) joins its parent.
			p.Phases[n-1].Phases = append(p.Phases[n-1].Phases, leaf.Phases...)
			continue
		}
		p.Phases = append(p.Phases, leaf)
	}
	return p
}

// systemdRuntime says whether cfg's control plane runs as systemd units.
func systemdRuntime(cfg *machineadm.MachineBootstrapConfig) bool {
	cp := cfg.Spec.ControlPlane
	return cp != nil && cp.Runtime == machineadm.RuntimeSystemd
}

// FirstControlPlane says whether cfg is the cluster's first control plane
// (role ControlPlane, action Init), where kubeadm's `upgrade apply` runs.
func FirstControlPlane(cfg *machineadm.MachineBootstrapConfig) bool {
	return cfg.Spec.Role == machineadm.RoleControlPlane && cfg.Spec.Action == machineadm.ActionInit
}

// KubeadmUpgradePhase is one phase of kubeadm's upgrade apply or node
// (v1.37), by kubeadm's name ("addon/coredns").
type KubeadmUpgradePhase struct {
	Name, Short string
	Class       errclass.Class
}

// KubeadmUpgradePhases returns kubeadm v1.37's `upgrade apply` (verb
// "apply") or `upgrade node` phases (cmd/kubeadm/app/cmd/upgrade), leaves
// in order.
func KubeadmUpgradePhases(verb string) []KubeadmUpgradePhase {
	cp, pre := errclass.ControlPlaneUnhealthy, errclass.PreflightFailed
	if verb == "apply" {
		return []KubeadmUpgradePhase{
			{"preflight", "kubeadm's upgrade preflight checks and version skew policy", pre},
			{"control-plane", "Upgrade the control plane (etcd, then each component; kubeadm backs up and rolls back)", cp},
			{"upload-config/kubeadm", "Upload the kubeadm ClusterConfiguration to the kubeadm-config ConfigMap", cp},
			{"upload-config/kubelet", "Upload the kubelet configuration to the kubelet-config ConfigMap", cp},
			{"kubeconfig", "Upgrade the kubeconfig files", cp},
			{"kubelet-config", "Upgrade the kubelet configuration of this node", errclass.KubeletFailed},
			{"bootstrap-token", "Configure the bootstrap token and cluster-info RBAC rules", cp},
			{"addon/coredns", "Upgrade the CoreDNS addon", cp},
			{"addon/kube-proxy", "Upgrade the kube-proxy addon", cp},
			{"post-upgrade", "kubeadm's post-upgrade tasks", cp},
		}
	}
	return []KubeadmUpgradePhase{
		{"preflight", "kubeadm's upgrade node preflight checks", pre},
		{"control-plane", "Upgrade the control plane of this node, if it has one (kubeadm backs up and rolls back)", cp},
		{"kubeconfig", "Upgrade the kubeconfig files", cp},
		{"kubelet-config", "Upgrade the kubelet configuration of this node", errclass.KubeletFailed},
		{"addon/coredns", "Upgrade the CoreDNS addon (once every control plane is upgraded)", cp},
		{"addon/kube-proxy", "Upgrade the kube-proxy addon (once every control plane is upgraded)", cp},
		{"post-upgrade", "kubeadm's post-upgrade tasks", cp},
	}
}

func kubeadmUpgradeLeaf(k KubeadmUpgradePhase) Phase {
	parent, leaf, nested := strings.Cut(k.Name, "/")
	name := k.Name
	if nested {
		name = leaf
	}
	ph := Phase{
		Name: name, Short: k.Short, Class: k.Class,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			_, skip, err := planned(d, upgrade.PhaseKubeadm)
			if skip != nil || err != nil {
				return resultOf(skip), err
			}
			if k.Name == "control-plane" && systemdRuntime(d.Config) {
				// kubeadm writes static pod manifests: the units are
				// replaced here instead, where kubeadm upgrades its
				// control plane (before the kubeadm-config upload and the
				// addons); the control-plane phase then finds them done.
				return upgradeSystemdUnits(ctx, d)
			}
			if d.DryRun {
				return Result{Changed: true, Changes: []string{"would run kubeadm upgrade phase " + k.Name + " to " + d.Upgrade.Plan.To}}, nil
			}
			if err := d.Upgrade.cluster().KubeadmPhase(ctx, d, k.Name); err != nil {
				return Result{}, err
			}
			return Result{Changed: true, Message: "kubeadm " + k.Name + " done"}, nil
		},
	}
	if nested {
		return Phase{Name: parent, Short: "kubeadm's " + parent + " phase", Class: k.Class, Phases: []Phase{ph}}
	}
	return ph
}

// upgradeSystemdUnits replaces the Systemd runtime's units in kubeadm's
// order (etcd, kube-apiserver, kube-controller-manager, kube-scheduler),
// one at a time, each healthy (or rolled back) before the next, with the
// runtime's ControlPlaneUpgrader; it stops at the first that fails.
func upgradeSystemdUnits(ctx context.Context, d *Data) (Result, error) {
	if d.DryRun {
		plan := []string{"would replace the units of " + strings.Join(upgrade.ControlPlaneComponents, ", ") + " (Systemd runtime) at " + d.Upgrade.Plan.To + ", one at a time: back each up, wait until it is healthy, roll it back if it is not"}
		if FirstControlPlane(d.Config) {
			// Before kubeadm's upload-config, which then stores the new
			// version with them.
			plan = append(plan, storeSettingsPlan)
		}
		return Result{Changed: true, Changes: plan}, nil
	}
	u := controlPlaneUpgrader(machineadm.RuntimeSystemd)
	if u == nil {
		return Result{}, errclass.New(errclass.Internal, "", fmt.Errorf("no control-plane upgrader for runtime %s in this build", machineadm.RuntimeSystemd))
	}
	var out Result
	for _, c := range upgrade.ControlPlaneComponents {
		r, err := u.UpgradeComponent(ctx, d, c)
		out.Changed = out.Changed || r.Changed
		out.Changes = append(out.Changes, r.Changes...)
		if err != nil {
			return out, err
		}
	}
	if !out.Changed {
		out.Message = "the units already run the spec's binaries and flags"
	}
	return out, nil
}
