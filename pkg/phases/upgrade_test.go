package phases

import (
	"testing"

	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/version"
)

// TestKubeadmUpgradePhasesAreKubeadms checks each phase the upgrade
// workflow lists is a phase of the embedded kubeadm's `upgrade apply` or
// `upgrade node`, so that a kubeadm bump that renames one fails here and
// not on a cluster.
func TestKubeadmUpgradePhasesAreKubeadms(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"apply", "node"} {
		phases := KubeadmUpgradePhases(verb)
		if len(phases) < 6 {
			t.Fatalf("%s: %d phases", verb, len(phases))
		}
		for _, p := range phases {
			if _, err := day2.PhaseArgs(verb, p.Name, "/c.yaml", nil); err != nil {
				t.Errorf("upgrade %s: %v", verb, err)
			}
		}
	}
}
