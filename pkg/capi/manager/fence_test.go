package manager

import (
	"os/exec"
	"strings"
	"testing"
)

// adapter is the agent's kubeadm adapter; its sub-packages
// (pkg/kubeadm/run, ...) link kubeadm as well.
const adapter = "github.com/machineadm/machineadm/pkg/kubeadm"

// TestControllerDoesNotLinkKubeadm: the controller renders through
// pkg/render and validates through pkg/spec, but never links kubeadm
// itself (only the agent's adapter pkg/kubeadm/... does).
func TestControllerDoesNotLinkKubeadm(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../../cmd/machineadm-controller").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	seen := false
	for _, d := range deps {
		if d == "sigs.k8s.io/controller-runtime/pkg/manager" {
			seen = true
		}
		if strings.HasPrefix(d, "k8s.io/kubernetes/cmd/kubeadm") || d == adapter || strings.HasPrefix(d, adapter+"/") {
			t.Errorf("machineadm-controller links %s", d)
		}
	}
	if !seen {
		t.Fatal("the dependency list lacks controller-runtime's manager: wrong package listed")
	}
}
