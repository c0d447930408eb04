package v1alpha1

import (
	"testing"

	"github.com/machineadm/machineadm/internal/fill"
)

// fullConfig returns a MachineBootstrapConfig with every field set to a
// non-zero value (fill.All), and apiVersion and kind set to this
// version's.
func fullConfig(t *testing.T) *MachineBootstrapConfig {
	t.Helper()
	var c MachineBootstrapConfig
	fill.All(t, &c)
	c.APIVersion, c.Kind = APIVersion, Kind
	return &c
}

func TestFillerSetsEveryField(t *testing.T) {
	c := fullConfig(t)
	// Spot checks that the filler reaches deep and odd shapes.
	if c.Spec.Node.Taints == nil || len(*c.Spec.Node.Taints) != 2 || (*c.Spec.Node.Taints)[1].Effect == "" {
		t.Errorf("taints (pointer to list) not filled: %+v", c.Spec.Node.Taints)
	}
	if len(c.Spec.ControlPlane.APIServer.ExtraArgs) != 2 {
		t.Errorf("inlined Component.ExtraArgs not filled")
	}
	if c.Spec.Report.Console == nil || !*c.Spec.Report.Console {
		t.Errorf("report.console (pointer to bool) not filled")
	}
	if len(c.Spec.Host.Containerd.Registries[1].Mirrors[1].Capabilities) != 2 {
		t.Errorf("nested lists not filled")
	}
}
