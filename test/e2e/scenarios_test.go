//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
)

// Bounds of the scenarios.
const (
	bootstrapTimeout = 8 * time.Minute
	readyTimeout     = 4 * time.Minute
	podTimeout       = 3 * time.Minute
)

// cluster is the state scenario 1 builds and later scenarios reuse.
type cluster struct {
	secrets clusterSecrets
	cp1     *Machine
	cs      *kubernetes.Clientset
}

// TestScenarios runs the scenarios in order on one cluster:
// 1 (Init + worker Join), 3 (wrong CA cert hash), 2 (workers bootstrapped
// by `machineadm render` output through cloud-init and the shell stub),
// 5 (workers provisioned by the real Ignition binary), 6 (a worker on
// containerd 2.x pulling through a registry mirror), 4 (HA control-plane
// Join). Later scenarios are skipped when scenario 1 left no working
// cluster. MACHINEADM_E2E_SCENARIOS (a comma-separated list of scenario
// numbers, for example "1" or "1,6") runs scenario 1 and the listed ones
// only.
func TestScenarios(t *testing.T) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	var c *cluster
	t.Run("1-init-and-worker-join", func(t *testing.T) {
		start := time.Now()
		c = scenarioInitAndJoin(ctx, t, e)
		timing(t, "scenario1", time.Since(start))
	})
	if c == nil {
		return // no cluster to build on
	}
	if e.demo != nil {
		return
	}
	// run runs scenario n unless MACHINEADM_E2E_SCENARIOS leaves it out.
	run := func(n, name string, f func(t *testing.T)) {
		if list := os.Getenv("MACHINEADM_E2E_SCENARIOS"); list != "" && !slices.Contains(strings.Split(list, ","), n) {
			return
		}
		t.Run(n+"-"+name, f)
	}
	run("3", "wrong-ca-cert-hash", func(t *testing.T) {
		start := time.Now()
		scenarioWrongCAHash(ctx, t, e, c)
		timing(t, "scenario3", time.Since(start))
	})
	run("2", "render-cloud-init-and-shell-stub", func(t *testing.T) {
		start := time.Now()
		scenarioRender(ctx, t, e, c)
		timing(t, "scenario2", time.Since(start))
	})
	run("5", "ignition-real-binary", func(t *testing.T) {
		start := time.Now()
		scenarioIgnition(ctx, t, e, c)
		timing(t, "scenario5", time.Since(start))
	})
	run("6", "containerd2-registry-mirror", func(t *testing.T) {
		start := time.Now()
		scenarioContainerd2(ctx, t, e, c)
		timing(t, "scenario6", time.Since(start))
	})
	run("4", "ha-control-plane-join", func(t *testing.T) {
		start := time.Now()
		scenarioHAJoin(ctx, t, e, c)
		timing(t, "scenario4", time.Since(start))
	})
}

// scenarioInitAndJoin: cp1 bootstraps a cluster (Init, CA set from
// `machineadm pki init`), w1 joins it as a worker with the bootstrap token
// and CA cert hash; the CNI configuration reaches both through spec files.
func scenarioInitAndJoin(ctx context.Context, t *testing.T, e *env) *cluster {
	secrets, err := e.makeSecrets(ctx, filepath.Join(e.runDir, "pki"))
	if err != nil {
		fatalln(t, err)
	}
	e.demo.step("Booting two machines, cp1 and w1: Debian, systemd, containerd, a private network")
	start := time.Now()
	ms := e.bootMachines(ctx, t, cp1, w1)
	timing(t, "boot-cp1-w1", time.Since(start))
	e.demo.done()
	mcp1, mw1 := ms[0], ms[1]
	if err := checkClosedNetwork(ctx); err != nil {
		errorf(t, "closed network: %v", err)
	}

	cpSpec := secureAPIServer(controlPlaneSpec(cp1, v1alpha1.ActionInit, ""))
	breakSpec(t, cpSpec)
	if err := deliver(mcp1, cpSpec, secrets); err != nil {
		fatalln(t, err)
	}
	if err := deliver(mw1, workerSpec(w1, secrets.caHash), secrets); err != nil {
		fatalln(t, err)
	}

	e.demo.step("Creating the cluster: machineadm bootstrap on cp1 runs kubeadm init")
	cpStart := mustBootstrap(ctx, t, mcp1, initPhases, true)
	e.demo.done()
	cs, err := adminClient(mcp1)
	if err != nil {
		fatalln(t, err)
	}
	cpEnd := time.Now()
	e.demo.step("Joining the worker: machineadm bootstrap on w1 runs kubeadm join")
	wStart := mustBootstrap(ctx, t, mw1, workerJoinPhases, true)
	// Where the first worker's time goes: both the bootstrap signer and the
	// approval of the kubelet's CSR wait for the controller-manager, which
	// becomes leader and then builds its controllers after cp1's init.
	if l, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "kube-controller-manager", metav1.GetOptions{}); err == nil && l.Spec.AcquireTime != nil {
		timing(t, "kube-controller-manager-leader-after-cp1-bootstrap-end", l.Spec.AcquireTime.Sub(cpEnd))
	}
	e.demo.done()
	e.demo.step("Checking the cluster: nodes Ready, kube-proxy, CoreDNS, a pod on w1 reaching cp1")

	ready, err := waitNodesReady(ctx, cs, readyTimeout, cp1.Name, w1.Name)
	if err != nil {
		dumpDiagnostics(ctx, t, mcp1, mw1)
		fatalln(t, err)
	}
	timing(t, "cp1-bootstrap-start-to-node-ready", ready[cp1.Name].Sub(cpStart))
	timing(t, "w1-bootstrap-start-to-node-ready", ready[w1.Name].Sub(wStart))
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalln(t, err)
	}
	if len(nodes.Items) != 2 {
		errorf(t, "cluster has %d nodes, want 2", len(nodes.Items))
	}
	if err := checkControlPlaneNode(ctx, cs, cp1.Name); err != nil {
		errorln(t, err)
	}
	checkAPIServerSecurity(ctx, t, mcp1, cp1.IP, cs)
	if err := waitStaticPodsRunning(ctx, cs, cp1.Name, podTimeout); err != nil {
		dumpDiagnostics(ctx, t, mcp1)
		fatalln(t, err)
	}
	pod, err := runTestPod(ctx, cs, w1, podTimeout)
	if err != nil {
		dumpDiagnostics(ctx, t, mw1)
		fatalln(t, err)
	}
	t.Logf("test pod %s running on %s with IP %s", pod.Name, pod.Spec.NodeName, pod.Status.PodIP)
	// The complete cluster: kubeadm's addons run (kube-proxy on both
	// nodes, CoreDNS), and a pod on w1 reaches cluster DNS and a Service in
	// front of a pod on cp1.
	netStart := time.Now()
	if err := waitDaemonPodsRunning(ctx, cs, "kube-proxy", podTimeout, cp1.Name, w1.Name); err != nil {
		dumpDiagnostics(ctx, t, mcp1, mw1)
		fatalln(t, err)
	}
	if err := waitDeploymentReady(ctx, cs, "coredns", podTimeout); err != nil {
		dumpDiagnostics(ctx, t, mcp1, mw1)
		fatalln(t, err)
	}
	if err := checkAddonsEnabled(ctx, cs); err != nil {
		errorln(t, err)
	}
	out, err := checkClusterNetwork(ctx, cs, cp1, w1, 90*time.Second)
	if err != nil {
		dumpDiagnostics(ctx, t, mcp1, mw1)
		fatalln(t, err)
	}
	t.Logf("w1 probe pod:\n%s", strings.TrimSpace(out))
	timing(t, "addons-and-service-network", time.Since(netStart))
	e.demo.done()
	if err := e.demo.keep(mcp1, mcp1, mw1); err != nil {
		fatalln(t, err)
	}
	// Reached only with a working cluster; later scenarios build on it even
	// when a report check above failed.
	return &cluster{secrets: secrets, cp1: mcp1, cs: cs}
}

// scenarioWrongCAHash: a worker pinning another CA must fail discovery:
// exit code 1, report class DiscoveryFailed, and no Node object.
func scenarioWrongCAHash(ctx context.Context, t *testing.T, e *env, c *cluster) {
	other, err := e.makeSecrets(ctx, filepath.Join(e.runDir, "other-pki"))
	if err != nil {
		fatalln(t, err)
	}
	m := e.bootMachines(ctx, t, w3)[0]
	defer func() {
		if err := e.stopMachine(m); err != nil {
			errorln(t, err)
		}
	}()
	if err := deliver(m, workerSpec(w3, other.caHash), c.secrets); err != nil {
		fatalln(t, err)
	}
	res, dur := bootstrap(ctx, t, m)
	timing(t, "w3-bootstrap-wrong-hash", dur)
	if res.ExitCode != 1 {
		errorf(t, "bootstrap with a wrong CA cert hash exited %d, want 1", res.ExitCode)
	}
	r, raw, err := readReport(m)
	if err != nil {
		fatalln(t, err)
	}
	t.Logf("w3 report: %s", r.summary())
	if r.Result != "Failed" || r.ErrorClass != "DiscoveryFailed" {
		errorf(t, "report result=%s errorClass=%s, want Failed DiscoveryFailed\n%s", r.Result, r.ErrorClass, raw)
	}
	if strings.Contains(string(raw), c.secrets.token) || strings.Contains(string(raw), strings.Split(c.secrets.token, ".")[1]) {
		errorf(t, "report contains the bootstrap token")
	}
	// Watch a little longer: a kubelet left running could still register.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		if _, err := c.cs.CoreV1().Nodes().Get(ctx, w3.Name, metav1.GetOptions{}); err == nil {
			errorf(t, "node %s exists after a failed discovery", w3.Name)
			break
		}
	}
	if _, err := os.Stat(filepath.Join(m.Root, "etc/kubernetes/kubelet.conf")); err == nil {
		errorf(t, "w3 has a kubelet.conf after a failed discovery")
	}
}

// mustBootstrap runs `machineadm bootstrap` in the machine and fails the
// test, showing the report's error class, unless it exits 0 (stopping the
// test when fatal); it returns when the run started. A missing or
// unsuccessful report, or one without the wanted phases, is an error, but
// the scenario goes on.
func mustBootstrap(ctx context.Context, t *testing.T, m *Machine, phases []string, fatal bool) time.Time {
	t.Helper()
	start := time.Now()
	res, dur := bootstrap(ctx, t, m)
	if res.ExitCode == 1 && strings.Contains(res.Stdout+res.Stderr, "server is not initialized yet") {
		// machineadm restarted containerd and kubeadm's preflight reached the
		// CRI before containerd's CRI plugin was ready. A bug (the containerd
		// phase must wait for the CRI), reported as an error; running
		// bootstrap again (what an operator would do) shows whether the rest
		// of the scenario works.
		errorf(t, "%s: machineadm bootstrap: kubeadm preflight reached containerd's CRI before it was initialized after the containerd restart (bug: the containerd phase does not wait for the CRI); running bootstrap again", m.Name)
		start = time.Now()
		res, dur = bootstrap(ctx, t, m)
	}
	timing(t, m.Name+"-bootstrap", dur)
	r, raw, rerr := readReport(m)
	if res.ExitCode != 0 {
		if rerr == nil {
			t.Logf("%s outcome report: %s", m.Name, r.summary())
		}
		dumpDiagnostics(ctx, t, m)
		if rerr != nil {
			errorf(t, "%s: machineadm bootstrap exited %d; no report: %v", m.Name, res.ExitCode, rerr)
		} else {
			errorf(t, "%s: machineadm bootstrap exited %d: errorClass=%s failedPhase=%s hint=%q",
				m.Name, res.ExitCode, r.ErrorClass, r.FailedPhase, r.Hint)
		}
		if fatal {
			t.FailNow()
		}
		return start
	}
	if rerr != nil {
		errorln(t, rerr)
		return start
	}
	if err := r.checkSucceeded(phases); err != nil {
		errorf(t, "%s: %v\n%s", m.Name, err, raw)
	}
	t.Logf("%s outcome report: %s", m.Name, r.summary())
	return start
}

// bootstrap runs `machineadm bootstrap -f SPEC` in the machine, keeping its
// output in the machine directory (bootstrap.log).
func bootstrap(ctx context.Context, t *testing.T, m *Machine) (ExecResult, time.Duration) {
	t.Helper()
	bctx, cancel := context.WithTimeout(ctx, bootstrapTimeout)
	defer cancel()
	start := time.Now()
	res, err := m.Exec(bctx, nil, "machineadm", "bootstrap", "-f", machineSpecFile)
	dur := time.Since(start)
	_ = os.WriteFile(filepath.Join(m.Dir, "bootstrap.log"), []byte(res.Stdout+res.Stderr), 0o600)
	if err != nil {
		t.Logf("%s: %v (after %s); output tail:\n%s", m.Name, err, dur.Round(time.Second), tail(res.Stdout+res.Stderr, 40))
	}
	if bctx.Err() != nil {
		fatalf(t, "%s: machineadm bootstrap did not finish within %s", m.Name, bootstrapTimeout)
	}
	return res, dur
}

// breakSpec applies a deliberate break named by MACHINEADM_E2E_BREAK, to
// show that a broken spec fails the e2e with the report's error class:
// "cri-socket" points the node at a containerd socket that does not exist.
func breakSpec(t *testing.T, s *v1alpha1.MachineBootstrapConfig) {
	switch b := os.Getenv("MACHINEADM_E2E_BREAK"); b {
	case "":
	case "cri-socket":
		s.Spec.Node.CRISocket = "unix:///run/containerd/no-such.sock"
		t.Logf("deliberate break: node.criSocket=%s", s.Spec.Node.CRISocket)
	default:
		fatalf(t, "unknown MACHINEADM_E2E_BREAK %q", b)
	}
}

// dumpDiagnostics logs what an operator would look at on a failed node.
func dumpDiagnostics(ctx context.Context, t *testing.T, ms ...*Machine) {
	t.Helper()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, m := range ms {
		for _, args := range [][]string{
			{"systemctl", "--failed", "--no-legend", "--plain"},
			{"journalctl", "--no-pager", "-n", "40", "-u", "kubelet"},
			{"journalctl", "--no-pager", "-n", "15", "-u", "containerd"},
			{"ctr", "-n", "k8s.io", "containers", "ls"},
		} {
			res, _ := m.Exec(dctx, nil, args...)
			t.Logf("%s$ %s\n%s%s", m.Name, strings.Join(args, " "), tail(res.Stdout, 60), tail(res.Stderr, 10))
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
