package phases

import (
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/windows"
)

// hostSteps are the host-preparation steps of this OS for cfg: Windows'
// own (domain join, Windows features, containerd, the kubelet service,
// firewall rules).
func hostSteps(cfg *machineadm.MachineBootstrapConfig) []host.Step {
	if cfg == nil {
		cfg = &machineadm.MachineBootstrapConfig{}
	}
	return windows.Steps(cfg, windows.Options{})
}
