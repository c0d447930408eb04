package phases

import (
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// The Systemd runtime's control plane has its upgrader in every build.
func TestSystemdControlPlaneUpgraderRegistered(t *testing.T) {
	if _, ok := controlPlaneUpgrader(machineadm.RuntimeSystemd).(systemdUpgrader); !ok {
		t.Errorf("the Systemd runtime's upgrader is %T", controlPlaneUpgrader(machineadm.RuntimeSystemd))
	}
}
