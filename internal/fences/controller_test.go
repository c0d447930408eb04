package fences

import (
	"slices"
	"testing"
)

// controllerCmd is the Cluster API providers' binary.
const controllerCmd = module + "/cmd/machineadm-controller"

// TestControllerUsesNoFullClientset: no package linked into
// machineadm-controller imports client-go's full clientset
// (k8s.io/client-go/kubernetes) but client-go's own (its informers and
// leader election, which never call its constructor here): not a
// machineadm package (the workload client is the core group's typed
// client), nor a library one calls, whose helper could build the
// clientset behind its back. The clientset is linked anyway, but only a
// call of its constructor keeps all of its ~50 API groups' clients: 9 MB
// of the binary, and about 4 MiB of it paged in per workload Cluster
// (docs/design.md, "Memory").
func TestControllerUsesNoFullClientset(t *testing.T) {
	for _, p := range list(t, "", "-deps", controllerCmd) {
		if hasPrefixAny(p.ImportPath, "k8s.io/client-go") {
			continue
		}
		if slices.Contains(p.Imports, "k8s.io/client-go/kubernetes") {
			t.Errorf("%s imports k8s.io/client-go/kubernetes: use the typed client of the one group needed (k8s.io/client-go/kubernetes/typed/core/v1)", p.ImportPath)
		}
	}
}

// TestControllerLinksNoNodeCode: machineadm-controller renders and seals
// bootstrap data; it links none of the code that prepares a host, runs
// kubeadm's phases or drains a node. Each such tree costs the controller
// its pages at start (every linked package's init runs) and its size.
func TestControllerLinksNoNodeCode(t *testing.T) {
	node := []string{
		module + "/pkg/cmd", module + "/pkg/session", module + "/pkg/phases", module + "/pkg/kubeadm",
		module + "/pkg/upgrade", module + "/pkg/host",
		"k8s.io/kubernetes", "k8s.io/kubectl",
	}
	// pkg/host/files' path resolution is shared with sealing, which
	// reads a spec's files under a root as the machine will.
	allowed := []string{module + "/pkg/host/files"}
	pkgs := list(t, "", controllerCmd)
	if len(pkgs) != 1 {
		t.Fatalf("go list %s: %d packages", controllerCmd, len(pkgs))
	}
	for _, dep := range pkgs[0].Deps {
		if hasPrefixAny(dep, node...) && !hasPrefixAny(dep, allowed...) {
			t.Errorf("machineadm-controller links %s", dep)
		}
	}
}
