package phases

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/kubeadm/run"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/version"
)

// TestSystemdRuntimeReplacesKubeadmPhases: with runtime Systemd, kubeadm
// runs every phase of its tree except etcd/local, control-plane/* and
// wait-control-plane, whose machineadm replacements (same names) plan the
// units in a dry run; the StaticPods example keeps all of kubeadm's.
func TestSystemdRuntimeReplacesKubeadmPhases(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "control-plane-systemd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Load(data, "control-plane-systemd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := testData(t)
	d.Config, d.Root, d.DryRun = l.Config, t.TempDir(), true
	deliverSecrets(t, d.Root, l.Config)
	var lines []string
	d.KubeadmOutput = func(l string) { lines = append(lines, l) }
	var ran []string
	d.RunKubeadm = func(ctx context.Context, r *run.Runner, p run.Phase) error {
		ran = append(ran, p.Name)
		return nil
	}
	w := &Workflow{Phases: append([]Phase{InputsCheck(), KubeadmConfigPhase()}, KubeadmPhases(l.Config)...)}
	if _, err := w.Run(context.Background(), d, &eventObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, replaced := range []string{"etcd/local", "control-plane/apiserver", "control-plane/controller-manager", "control-plane/scheduler", "wait-control-plane"} {
		for _, r := range ran {
			if r == replaced {
				t.Errorf("kubeadm ran %s", r)
			}
		}
	}
	if want := []string{"preflight", "certs/ca", "kubelet-start", "upload-config/kubeadm", "addon/kube-proxy"}; !containsAll(ran, want) {
		t.Errorf("kubeadm ran %v, want among them %v", ran, want)
	}
	out := strings.Join(lines, "\n")
	for _, want := range []string{"ExecStart=/usr/local/bin/etcd", "ExecStart=/opt/kubernetes/bin/kube-apiserver", "system/kube-scheduler.service", "would wait for the kubelet"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Only the secret files the test delivered are under the root.
	_ = filepath.WalkDir(d.Root, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && !strings.HasPrefix(p, filepath.Join(d.Root, "etc/machineadm/secrets")+"/") {
			t.Errorf("dry run wrote %s under the root", p)
		}
		return nil
	})

	l.Config.Spec.ControlPlane.Runtime = "StaticPods"
	var names []string
	for _, p := range KubeadmPhases(l.Config) {
		if strings.Contains(p.Short, "Systemd runtime") {
			names = append(names, p.Name)
		}
	}
	if !reflect.DeepEqual(names, []string(nil)) {
		t.Errorf("StaticPods runtime has Systemd phases %v", names)
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}
