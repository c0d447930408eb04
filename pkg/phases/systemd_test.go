package phases

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
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
	l := loadExample(t, "control-plane-systemd.yaml")
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

// TestSystemdDryRunWritesUnits: a Systemd-runtime dry run writes the unit
// and environment files a real run installs into the dry-run directory, by
// their machine paths, and its etcd and control-plane phases name them in
// their plans, as kubeadm's dry run writes and names the static pod
// manifests; nothing is written under the root.
func TestSystemdDryRunWritesUnits(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	// kubeadm gives the control-plane pods the host's proxy settings: the
	// units get them through environment files.
	t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
	l := loadExample(t, "control-plane-systemd.yaml")
	d := testData(t)
	d.Config, d.Root, d.DryRun = l.Config, t.TempDir(), true
	deliverSecrets(t, d.Root, l.Config)
	d.RunKubeadm = func(ctx context.Context, r *run.Runner, p run.Phase) error { return nil }
	obs := &resultObs{results: map[string]Result{}}
	w := &Workflow{Phases: append([]Phase{InputsCheck(), KubeadmConfigPhase()}, KubeadmPhases(l.Config)...)}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	for phase, files := range map[string][]string{
		"etcd/local":                       {"/etc/systemd/system/etcd.service"},
		"control-plane/apiserver":          {"/etc/systemd/system/kube-apiserver.service", "/etc/machineadm/units/kube-apiserver.env"},
		"control-plane/controller-manager": {"/etc/systemd/system/kube-controller-manager.service"},
		"control-plane/scheduler":          {"/etc/systemd/system/kube-scheduler.service"},
	} {
		r := obs.results[phase]
		if !r.Changed {
			t.Errorf("%s: not changed in the plan: %+v", phase, r)
		}
		plan := strings.Join(r.Changes, "\n")
		for _, f := range files {
			if strings.HasSuffix(f, ".env") {
				f = filepath.Join(cpunitsEnvDir(), filepath.Base(f))
			}
			if !strings.Contains(plan, "would write "+f+" (") {
				t.Errorf("%s: the plan does not name %s:\n%s", phase, f, plan)
			}
			got, err := os.ReadFile(filepath.Join(d.WorkDir, "systemd", f))
			if err != nil {
				t.Errorf("%s: %v", phase, err)
				continue
			}
			if strings.HasSuffix(f, ".service") && !strings.Contains(string(got), "ExecStart=") {
				t.Errorf("%s: %s is not a unit:\n%s", phase, f, got)
			}
			if strings.HasSuffix(f, ".env") && !strings.Contains(string(got), "proxy.example") {
				t.Errorf("%s: %s lacks the proxy setting:\n%s", phase, f, got)
			}
		}
		if strings.Contains(plan, "proxy.example") || strings.Contains(plan, "ExecStart") {
			t.Errorf("%s: file contents in the plan:\n%s", phase, plan)
		}
	}
	if r := obs.results["wait-control-plane"]; !strings.Contains(strings.Join(r.Changes, "\n"), "would wait for the kubelet") {
		t.Errorf("wait-control-plane plan: %+v", r)
	}
	_ = filepath.WalkDir(d.Root, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && !strings.HasPrefix(p, filepath.Join(d.Root, "etc/machineadm/secrets")+"/") {
			t.Errorf("dry run wrote %s under the root", p)
		}
		return nil
	})
}

func cpunitsEnvDir() string { return cpunits.EnvDir }

// loadExample loads docs/examples/name as the CLI loads a spec; an error
// fails t.
func loadExample(t *testing.T, name string) *spec.Loaded {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Load(data, name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
