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

// kubeadm's upgrade preflight does not look for static pod manifests on a
// Systemd control plane; it does on static pods.
func TestSystemdIgnoredUpgradeChecks(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeSystemd}}}
	if got := systemdIgnoredUpgradeChecks(cfg); len(got) != 1 || got[0] != "StaticPodManifest" {
		t.Errorf("Systemd: %q", got)
	}
	cfg.Spec.ControlPlane.Runtime = machineadm.RuntimeStaticPods
	if got := systemdIgnoredUpgradeChecks(cfg); len(got) != 0 {
		t.Errorf("static pods: %q", got)
	}
}
