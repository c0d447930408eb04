package phases

import (
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
	// The host concerns of this OS register themselves.
	_ "github.com/machineadm/machineadm/pkg/host/builtins"
)

// hostSteps are the host-preparation steps of this OS for cfg, one per
// registered concern (host.Steps).
func hostSteps(cfg *machineadm.MachineBootstrapConfig) []host.Step { return host.Steps(cfg) }
