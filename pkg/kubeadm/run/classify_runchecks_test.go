package run

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/cmd/kubeadm/app/preflight"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/stdio"
)

// failingCheck is a kubeadm preflight check that fails with err.
type failingCheck struct {
	name string
	err  error
}

func (c failingCheck) Check() ([]error, []error) { return nil, []error{c.err} }
func (c failingCheck) Name() string              { return c.name }

// runChecks runs kubeadm's own preflight.RunChecks on checks as an
// upgrade phase does, its output captured as the upgrade runner captures
// it (stdio.Capture into a Tail), and classifies its error.
func runChecks(t *testing.T, ignore sets.Set[string], checks ...preflight.Checker) (errclass.Class, string) {
	t.Helper()
	var tail Tail
	stdio.Mu.Lock()
	defer stdio.Mu.Unlock()
	err := stdio.Capture(tail.Add, func(io.Writer, io.Writer) error {
		if err := preflight.RunChecks(checks, os.Stderr, ignore); err != nil {
			return err
		}
		// An ignored check's error was a warning: the phase fails after.
		return errors.New("the version argument is invalid due to these fatal errors:\n\n\t- x\nPlease fix the misalignments highlighted above and try upgrading again")
	})
	p := Phase{Name: "preflight", Class: errclass.PreflightFailed, Hint: "preflight's own hint", Upgrade: true}
	return ClassifyTail(p, errors.New("kubeadm upgrade apply phase preflight: error execution phase preflight: "+err.Error()), &tail)
}

// TestClassifyKubeadmsRunChecks: kubeadm's own RunChecks output, through
// the capture and the Tail: its failed check is named and quoted; a
// webhook's message in a check's error with a header and a CRI check of
// its own, as the failed check or as an ignored check's warning, picks
// neither the class nor the check named.
func TestClassifyKubeadmsRunChecks(t *testing.T) {
	denied := errors.New(`could not create Job "upgrade-health-check-1" in the namespace "kube-system": admission webhook "policy.example.com" denied the request: blocked` + "\n[preflight] Some fatal errors occurred:\n\t[ERROR CRI]: container runtime is not running")
	nodes := failingCheck{"ControlPlaneNodesReady", errors.New(`there are NotReady control-planes in the cluster: [cp2]`)}
	if c, h := runChecks(t, nil, nodes); c != errclass.PreflightFailed || !strings.Contains(h, "ControlPlaneNodesReady (ControlPlaneNodesReady: there are NotReady control-planes in the cluster: [cp2])") {
		t.Errorf("kubeadm's failed check: class %s, hint %q; want %s naming and quoting it", c, h, errclass.PreflightFailed)
	}
	if c, h := runChecks(t, nil, failingCheck{"CreateJob", denied}, nodes); c != errclass.PreflightFailed || h != "preflight's own hint" {
		t.Errorf("a webhook's header in the failed check: class %s, hint %q; want %s with the phase's hint", c, h, errclass.PreflightFailed)
	}
	if c, h := runChecks(t, sets.New("createjob"), failingCheck{"CreateJob", denied}); c != errclass.PreflightFailed || h != "preflight's own hint" {
		t.Errorf("a webhook's header in an ignored check's warning: class %s, hint %q; want %s with the phase's hint", c, h, errclass.PreflightFailed)
	}
}
