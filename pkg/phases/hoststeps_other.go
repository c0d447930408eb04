//go:build !windows

package phases

import (
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
	// The Linux domain join registers its host step.
	_ "github.com/machineadm/machineadm/pkg/host/domainjoin"
)

// hostSteps are the host-preparation steps of this OS for cfg.
func hostSteps(cfg *machineadm.MachineBootstrapConfig) []host.Step { return host.Steps(cfg) }
