package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAgentDoesNotLinkManagementSide keeps the agent binary free of the
// Cluster API provider's dependencies: controller-runtime, the Cluster API
// types and the provider's own packages belong to machineadm-controller
// only (issue 11).
func TestAgentDoesNotLinkManagementSide(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed only %d packages; the fence would prove nothing", len(deps))
	}
	forbidden := []string{"sigs.k8s.io/controller-runtime", "sigs.k8s.io/cluster-api", "github.com/machineadm/machineadm/pkg/capi"}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("cmd/machineadm links %s", d)
			}
		}
	}
}
