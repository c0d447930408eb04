package day2

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	upgradephases "k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/upgrade"
	"k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/workflow"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// phaseProbe stands in for kubeadm's addon phases (LocalControlPlane's
// Addons): each run records its name and the upgrade data it got, and
// prints a line through the data's output writer.
type phaseProbe struct {
	ran  []string
	data []workflow.RunData
	// out is the output writer of the last run's data.
	out io.Writer
	// fail makes the next run fail.
	fail bool
}

func (p *phaseProbe) phase(name string) func(workflow.RunData) error {
	return func(c workflow.RunData) error {
		d := c.(upgradephases.Data)
		p.ran, p.data, p.out = append(p.ran, name), append(p.data, c), d.OutputWriter()
		fmt.Fprintf(d.OutputWriter(), "probe ran %s\n", name)
		if p.fail {
			p.fail = false
			return errors.New("probe failed")
		}
		return nil
	}
}

// TestUpgradeRunnerKeepsTheDataBetweenPhases runs a sequence of kubeadm's
// upgrade phases through one UpgradeRunner (the Systemd runtime's
// workflow runner, whose data a loopback API server can feed): the
// upgrade data is built once, at the first phase, and kept for the
// others, a hidden one too; each call runs the phase named and no other;
// the data's output writer reaches the phase running now (and nothing
// once it returned); Forget and a failed phase make the next phase build
// the data again.
func TestUpgradeRunnerKeepsTheDataBetweenPhases(t *testing.T) {
	if _, err := os.Stat("/etc/kubernetes/kubelet.conf"); err == nil {
		t.Skip("/etc/kubernetes/kubelet.conf exists: kubeadm's kubeconfig phase would read this node's")
	}
	yaml := exampleInit(t, nil)
	f := &fakeCluster{clusterConfig: clusterConfigurationDoc(t, yaml)}
	srv := f.serve(t)
	dir := t.TempDir()
	admin := adminKubeconfig(t, dir, srv)
	cfgData, err := UpgradeConfig(UpgradeOptions{KubernetesVersion: "v1.37.2", EtcdUpgrade: true, CertificateRenewal: true, SkipImagePulls: true})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "upgrade.yaml")
	if err := os.WriteFile(cfgPath, cfgData, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &phaseProbe{}
	addons := &workflow.Phase{Name: "addon", Phases: []workflow.Phase{
		{Name: "coredns", Run: p.phase("addon/coredns")},
		{Name: "kube-proxy", Run: p.phase("addon/kube-proxy")},
	}}
	var lines []string
	r := &UpgradeRunner{
		Verb: "node", ConfigPath: cfgPath, Output: func(l string) { lines = append(lines, l) },
		Local: &LocalControlPlane{Endpoint: kubeadmapi.APIEndpoint{AdvertiseAddress: "192.0.2.10", BindPort: 6443}, AdminKubeconfig: admin, Addons: addons},
	}
	fetches := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, q := range f.requests {
			if strings.HasPrefix(q, "/api/v1/namespaces/kube-system/configmaps/kubeadm-config?") {
				n++
			}
		}
		return n
	}
	run := func(name string) error {
		t.Helper()
		lines = nil
		return r.Run(t.Context(), name, errclass.ControlPlaneUnhealthy)
	}

	if err := run("addon/coredns"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.ran, []string{"addon/coredns"}) || fetches() != 1 {
		t.Fatalf("first phase: ran %v, kubeadm-config fetched %d times; want addon/coredns, once", p.ran, fetches())
	}
	// post-upgrade (no flags to remove: it changes nothing here) and the
	// hidden kubeconfig phase (no kubelet.conf: nothing to change) run
	// on the kept data and run no addon.
	for _, name := range []string{"post-upgrade", "kubeconfig"} {
		if err := run(name); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, strings.Join(lines, "\n"))
		}
	}
	if len(p.ran) != 1 || fetches() != 1 {
		t.Fatalf("after post-upgrade and kubeconfig: ran %v, kubeadm-config fetched %d times; want no addon again, once", p.ran, fetches())
	}
	if err := run("addon/kube-proxy"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.ran, []string{"addon/coredns", "addon/kube-proxy"}) || p.data[1] != p.data[0] || fetches() != 1 {
		t.Fatalf("kube-proxy: ran %v, same data %v, kubeadm-config fetched %d times; want the kept data", p.ran, p.data[1] == p.data[0], fetches())
	}
	// The data, built during the first phase, prints into this one.
	if !slices.Contains(lines, "probe ran addon/kube-proxy") {
		t.Errorf("kube-proxy's line did not reach the phase's output: %q", lines)
	}
	// Once the phase returned, its pipe is closed: the kept writer
	// discards, without an error, and nothing reaches a later phase.
	if _, err := fmt.Fprintln(p.out, "late line"); err != nil {
		t.Errorf("a write after the phase: %v", err)
	}

	r.Forget()
	if err := run("addon/coredns"); err != nil {
		t.Fatal(err)
	}
	if p.data[2] == p.data[1] || fetches() != 2 {
		t.Errorf("after Forget: same data %v, kubeadm-config fetched %d times; want the data built again", p.data[2] == p.data[1], fetches())
	}
	if slices.Contains(lines, "late line") {
		t.Errorf("a line written after its phase reached a later one: %q", lines)
	}

	p.fail = true
	if err := run("addon/kube-proxy"); err == nil || !strings.Contains(err.Error(), "probe failed") {
		t.Fatalf("a failing phase: %v", err)
	}
	if err := run("addon/kube-proxy"); err != nil {
		t.Fatal(err)
	}
	if p.data[4] == p.data[3] || fetches() != 3 {
		t.Errorf("after a failure: same data %v, kubeadm-config fetched %d times; want the data built again", p.data[4] == p.data[3], fetches())
	}
}
