//go:build !windows

// envtest cannot build for Windows: controller-runtime v0.25.2's
// pkg/internal/testing/process declares signalProcess twice there.

package day2

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmv1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	upgradephases "k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/upgrade"
	"k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/workflow"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/internal/testassets"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/kubeadmtest"
)

// The test below runs against a real kube-apiserver and etcd,
// envtest-style: the binaries the e2e builds ($MACHINEADM_E2E_CACHE/bin,
// default /var/cache/machineadm-e2e/bin) or any directory in
// KUBEBUILDER_ASSETS. Without them it skips, unless
// MACHINEADM_REQUIRE_ENVTEST=1 (CI), where it fails. It starts its API
// server itself: the package's other tests do not need one.

const kubeadmConfigPath = "/api/v1/namespaces/kube-system/configmaps/kubeadm-config"

// countingProxy is a loopback reverse proxy in front of an API server
// that authenticates with the server's admin credential and counts the
// GET requests by path.
type countingProxy struct {
	mu   sync.Mutex
	gets map[string]int
}

func (p *countingProxy) count(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gets[path]
}

// serveCountingProxy starts the proxy to cfg's API server and writes a
// kubeconfig for it (no credential of its own: the proxy adds cfg's)
// into dir.
func serveCountingProxy(t *testing.T, cfg *rest.Config, dir string) (*countingProxy, string) {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = tr
	p := &countingProxy{gets: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			p.mu.Lock()
			p.gets[r.URL.Path]++
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	kc := filepath.Join(dir, "proxy.conf")
	data := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster: {server: %q}\nusers:\n- name: proxy\n  user: {}\ncontexts:\n- name: envtest\n  context: {cluster: envtest, user: proxy}\ncurrent-context: envtest\n", srv.URL)
	if err := os.WriteFile(kc, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, kc
}

// seedCluster creates what kubeadm's upgrade data reads from a cluster:
// the kubeadm-config ConfigMap with clusterConfig, kubelet-config,
// kube-proxy, and this host's Node (kubeadm names the node after the
// host when it has no kubelet.conf).
func seedCluster(t *testing.T, cfg *rest.Config, clusterConfig string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kubeadmtest.SeedCluster(t, cs, clusterConfig)
}

// nodeDryRunConfig is the production UpgradeConfiguration (UpgradeConfig)
// with node.dryRun set, written into dir: kubeadm's `upgrade node` phases
// then write only into its dry-run directory.
func nodeDryRunConfig(t *testing.T, dir string) string {
	t.Helper()
	data, err := UpgradeConfig(UpgradeOptions{KubernetesVersion: "v1.37.2", EtcdUpgrade: true, CertificateRenewal: true})
	if err != nil {
		t.Fatal(err)
	}
	var c kubeadmv1beta4.UpgradeConfiguration
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatal(err)
	}
	dryRun := true
	c.Node.DryRun = &dryRun
	if data, err = yaml.Marshal(&c); err != nil {
		t.Fatal(err)
	}
	if _, err := configutil.BytesToUpgradeConfiguration(data); err != nil {
		t.Fatalf("kubeadm refused the dry-run UpgradeConfiguration: %v", err)
	}
	p := filepath.Join(dir, "kubeadm-upgrade.yaml")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// nodePhases are kubeadm v1.37's `upgrade node` phases (leaves), for the
// hidden phase's --skip-phases.
var nodePhases = []string{"preflight", "control-plane", "kubeconfig", "kubelet-config", "addon/coredns", "addon/kube-proxy", "post-upgrade"}

// TestUpgradeRunnerKeepsTheUpgradeData runs kubeadm's `upgrade node`
// phases through one UpgradeRunner against a real API server, counting
// the GETs of the kubeadm-config ConfigMap behind it: kubeadm builds its
// upgrade data (and so fetches the ConfigMap) once for the runner's
// single-phase commands, as its whole `upgrade node` does; the hidden
// kubeconfig phase runs in a tree of its own (one fetch of its own) and
// does not keep the next phase from running; Forget and a failed phase
// make the next phase fetch again; and the lines the kept data prints go
// to the phase running now (Output), not to the first phase's pipe. The
// Systemd runtime's local runner keeps its data the same way.
func TestUpgradeRunnerKeepsTheUpgradeData(t *testing.T) {
	// A worker (no control plane, no credential) on this host: kubeadm's
	// node data asks the host whether it is a control plane and who it
	// is; the test must not find or reach a real cluster.
	for _, p := range []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf", "/etc/kubernetes/manifests/kube-apiserver.yaml"} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists: this machine is a node, and the test must not reach its cluster", p)
		}
	}
	clusterConfig := clusterConfigurationDoc(t, exampleInit(t, nil))
	cfg := testassets.StartEnvtest(t)
	seedCluster(t, cfg, clusterConfig)
	dir := t.TempDir()
	proxy, kubeconfig := serveCountingProxy(t, cfg, dir)
	// kubeadm's dry run writes into this directory instead of
	// /etc/kubernetes/tmp.
	dryRunDir := filepath.Join(dir, "dry-run")
	if err := os.Mkdir(dryRunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv(kubeadmconstants.EnvVarUpgradeDryRunDir, dryRunDir)

	t.Run("kubeadm's upgrade node", func(t *testing.T) {
		var lines []string
		r := &UpgradeRunner{Verb: "node", ConfigPath: nodeDryRunConfig(t, dir), Kubeconfig: kubeconfig, All: nodePhases,
			Output: func(l string) { lines = append(lines, l) }}
		base := proxy.count(kubeadmConfigPath)
		step := func(name, want string, fetches int) {
			t.Helper()
			lines = nil
			if err := r.Run(t.Context(), name, errclass.ControlPlaneUnhealthy, ""); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, strings.Join(lines, "\n"))
			}
			if got := proxy.count(kubeadmConfigPath) - base; got != fetches {
				t.Errorf("after %s: kubeadm-config fetched %d times, want %d\n%s", name, got, fetches, strings.Join(lines, "\n"))
			}
			if !containsLine(lines, want) {
				t.Errorf("%s: no line %q in its output (did it run, and did its lines reach Output?):\n%s", name, want, strings.Join(lines, "\n"))
			}
		}
		// The first phase builds the data: one fetch. The next two print
		// through the kept data's writer (the relay).
		step("control-plane", "[upgrade/control-plane] Skipping phase. Not a control plane node.", 1)
		step("addon/coredns", "[upgrade/addon] Skipping the addon/coredns phase. Not a control plane node.", 1)
		step("addon/kube-proxy", "[upgrade/addon] Skipping the addon/kube-proxy phase. Not a control plane node.", 1)
		// The hidden phase: the whole command in a tree of its own, the
		// others skipped.
		step("kubeconfig", "[upgrade/kubeconfig] Skipping phase. Not a control plane node.", 2)
		for _, other := range []string{"[upgrade/control-plane]", "Skipping the addon/coredns", "[upgrade/kubelet-config]"} {
			if containsLine(lines, other) {
				t.Errorf("the hidden kubeconfig phase ran another phase (%q):\n%s", other, strings.Join(lines, "\n"))
			}
		}
		// The next single-phase command runs (not skipped by the hidden
		// phase's --skip-phases) on the kept data.
		step("kubelet-config", "[upgrade/kubelet-config] The kubelet configuration for this node was successfully upgraded!", 2)
		if !containsLine(lines, "[dryrun] Would back up kubelet config file to") {
			t.Errorf("kubelet-config's lines through the kept data's writer did not reach Output:\n%s", strings.Join(lines, "\n"))
		}
		r.Forget()
		step("addon/coredns", "[upgrade/addon] Skipping the addon/coredns phase. Not a control plane node.", 3)

		// A failed phase drops the tree: kubeadm's kubelet-config phase
		// fails on an instance configuration that is not YAML (in the
		// dry-run directory, where it reads it). Its backup directory
		// is named by the second: the first run's is removed, so that
		// the failure is the instance configuration's.
		if err := os.RemoveAll(filepath.Join(dryRunDir, kubeadmconstants.TempDir)); err != nil {
			t.Fatal(err)
		}
		instance := filepath.Join(dryRunDir, kubeadmconstants.KubeletInstanceConfigurationFileName)
		if err := os.WriteFile(instance, []byte("containerRuntimeEndpoint: [unclosed\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		lines = nil
		const hint = "kubelet-config's own hint"
		err := r.Run(t.Context(), "kubelet-config", errclass.KubeletFailed, hint)
		var ce *errclass.Error
		if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), "instance configuration") {
			t.Fatalf("kubelet-config with a broken instance configuration: %v, want a classified failure about it\n%s", err, strings.Join(lines, "\n"))
		}
		// Nothing more precise explains it: the phase's class and hint.
		if class, h := errclass.Of(err); class != errclass.KubeletFailed || h != hint {
			t.Errorf("kubelet-config's failure: class %s, hint %q; want %s and the phase's hint", class, h, errclass.KubeletFailed)
		}
		if got := proxy.count(kubeadmConfigPath) - base; got != 3 {
			t.Errorf("the failed phase fetched kubeadm-config: %d fetches, want 3", got)
		}
		if err := os.Remove(instance); err != nil {
			t.Fatal(err)
		}
		step("addon/kube-proxy", "[upgrade/addon] Skipping the addon/kube-proxy phase. Not a control plane node.", 4)
	})

	t.Run("Systemd runtime's local runner", func(t *testing.T) {
		// The Systemd runtime's data says this is a control plane: its
		// phases that change nothing here are post-upgrade (no kubelet
		// flag to remove) and an addon phase (LocalControlPlane.Addons,
		// the production hook for SystemdAddons) that reports what the
		// data holds.
		probe := &workflow.Phase{Name: "addon", Phases: []workflow.Phase{
			{Name: "probe", Run: func(c workflow.RunData) error {
				d, ok := c.(upgradephases.Data)
				if !ok {
					return errors.New("not upgrade data")
				}
				fmt.Fprintf(d.OutputWriter(), "probe: cluster at %s\n", d.InitCfg().KubernetesVersion)
				return nil
			}},
			{Name: "fail", Run: func(workflow.RunData) error { return errors.New("probe failure") }},
		}}
		var lines []string
		r := &UpgradeRunner{Verb: "node", ConfigPath: nodeDryRunConfig(t, dir), All: nodePhases,
			Local:  &LocalControlPlane{Endpoint: kubeadmapi.APIEndpoint{AdvertiseAddress: "127.0.0.1", BindPort: 6443}, AdminKubeconfig: kubeconfig, Addons: probe},
			Output: func(l string) { lines = append(lines, l) }}
		base := proxy.count(kubeadmConfigPath)
		for i, s := range []struct {
			name    string
			forget  bool
			fails   bool
			fetches int
		}{
			{name: "addon/probe", fetches: 1},
			{name: "post-upgrade", fetches: 1},
			{name: "addon/probe", fetches: 1},
			{name: "addon/probe", forget: true, fetches: 2},
			{name: "addon/fail", fails: true, fetches: 2},
			{name: "addon/probe", fetches: 3},
		} {
			if s.forget {
				r.Forget()
			}
			lines = nil
			err := r.Run(t.Context(), s.name, errclass.ControlPlaneUnhealthy, "")
			if (err != nil) != s.fails {
				t.Fatalf("step %d, %s: %v\n%s", i, s.name, err, strings.Join(lines, "\n"))
			}
			if got := proxy.count(kubeadmConfigPath) - base; got != s.fetches {
				t.Errorf("step %d, after %s: kubeadm-config fetched %d times, want %d", i, s.name, got, s.fetches)
			}
			if s.name == "addon/probe" && !containsLine(lines, "probe: cluster at v1.37.2") {
				t.Errorf("step %d: the probe's line through the kept data's writer did not reach Output:\n%s", i, strings.Join(lines, "\n"))
			}
		}
	})
}

func containsLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}
