package cpunits_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

func TestCheckBinaries(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr/local/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"etcd": 0o755, "kube-apiserver": 0o644} {
		if err := os.WriteFile(filepath.Join(root, "usr/local/bin", name), []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
	}
	s := &machineadm.MachineBootstrapSpec{
		ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeSystemd, Binaries: &machineadm.ControlPlaneBinaries{
			Etcd: "/usr/local/bin/etcd", KubeAPIServer: "/usr/local/bin/kube-apiserver",
			KubeControllerManager: "/usr/local/bin/kube-controller-manager", KubeScheduler: "/opt/kube-scheduler"}},
		Host: machineadm.Host{Files: []machineadm.File{{Path: "/opt/kube-scheduler"}}},
	}
	err := cpunits.CheckBinaries(root, s)
	if err == nil {
		t.Fatal("a missing and a non-executable binary passed")
	}
	msg := err.Error()
	for _, want := range []string{"binaries.kubeAPIServer", "binaries.kubeControllerManager"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %s:\n%s", want, msg)
		}
	}
	for _, not := range []string{"binaries.etcd", "binaries.kubeScheduler"} {
		if strings.Contains(msg, not) {
			t.Errorf("error names %s, which is fine:\n%s", not, msg)
		}
	}
	s.ControlPlane.Runtime = machineadm.RuntimeStaticPods
	if err := cpunits.CheckBinaries(root, s); err != nil {
		t.Errorf("StaticPods runtime: %v", err)
	}
}
