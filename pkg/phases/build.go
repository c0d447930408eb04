package phases

import (
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm"
)

// Bootstrap returns the bootstrap workflow for a validated hub spec:
// inputs-check (secret files and CA set read and checked), the host
// preparation phases (before), then kubeadm-config, then kubeadm's
// init phases (action Init) or join phases (action Join), then the host
// phases that must follow kubeadm (after; see HostPhases).
func Bootstrap(cfg *machineadm.MachineBootstrapConfig, before, after []Phase) *Workflow {
	w := &Workflow{Phases: []Phase{InputsCheck()}}
	w.Phases = append(w.Phases, before...)
	w.Phases = append(w.Phases, KubeadmConfigPhase())
	var kps []kubeadm.Phase
	if cfg.Spec.Action == machineadm.ActionInit {
		kps = kubeadm.InitPhases(cfg)
	} else {
		kps = kubeadm.JoinPhases(cfg)
	}
	for _, p := range kps {
		w.Phases = append(w.Phases, KubeadmPhase(p))
	}
	w.Phases = append(w.Phases, after...)
	return w
}
