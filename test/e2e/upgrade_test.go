//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmv1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// Bounds of the upgrade scenario.
const (
	upgradeTimeout = 10 * time.Minute
	// drainKubeconfig is where a worker gets the credential its drain
	// uses (machineadm upgrade --kubeconfig).
	drainKubeconfig = "/etc/machineadm/drain.conf"
	// upgradeStatePath is the upgrade's journal (docs/upgrade.md).
	upgradeStatePath = "/var/lib/machineadm/upgrade.jsonl"
	// The audit policy the reconfiguration adds. It lives below the
	// certificates directory, which kubeadm's API server pod mounts
	// (read-only) from the host, so the static pod sees it too; the
	// audit log goes to the API server's standard output ("-").
	auditPolicyPath = "/etc/kubernetes/pki/machineadm-e2e-audit-policy.yaml"
	auditPolicy     = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources:\n  - group: \"\"\n    resources: [\"secrets\"]\n- level: None\n"
)

// upgradeKills are the SIGKILLs of cp1's control-plane upgrade, in three
// different top-level phases of the upgrade workflow, each at its first
// open for the phase's work; every rerun resumes in the phase it was
// killed in.
var upgradeKills = []crashKill{{phase: upgrade.PhaseDrain}, {phase: upgrade.PhaseKubeadm}, {phase: upgrade.PhaseKubelet}}

// upgradeCrashCmd is `machineadm upgrade` for the kills.
var upgradeCrashCmd = crashCmd{args: []string{"machineadm", "upgrade", "-f", machineSpecFile}, state: upgradeStatePath}

// upgradeCluster is an HA cluster of the previous minor: cp1 (Init), cp2
// (control-plane Join), w1 (worker).
type upgradeCluster struct {
	secrets       clusterSecrets
	cp1, cp2, w1  *Machine
	cs            *kubernetes.Clientset
	systemd       bool
	kubeletSHA256 map[string]string // by version
	// endpoint is the control-plane endpoint of every node's spec, ""
	// for apiServerEndpoint (cp1's API server).
	endpoint string
}

func (c *upgradeCluster) machines() []*Machine { return []*Machine{c.cp1, c.cp2, c.w1} }

// TestUpgrade: an HA cluster (cp1, cp2, w1) bootstrapped at the previous
// minor is upgraded to the embedded kubeadm's version with `machineadm
// upgrade`, node by node, while a ClusterIP Service backed by pods on two
// nodes is probed every 200 ms from every node; cp1's upgrade is killed
// (SIGKILL) in three phases and run again. Afterwards every kubelet and
// component reports the new version, etcd has both members and
// kubeadm-config names the new version. On the same cluster a changed
// spec adds a typed audit policy and an API server flag: the API server
// restarts once with them, audit events appear in its log, and a rerun
// plans no change and restarts nothing.
// TestUpgradeSystemd is the same for a `runtime: Systemd` control plane.
func TestUpgrade(t *testing.T) {
	testUpgrade(t, false)
}

// TestUpgradeSystemd: an HA cluster (cp1, cp2 with `runtime: Systemd`
// control planes, w1) bootstrapped at the previous minor: first the
// in-place reconfiguration at that version (audit policy and API server
// flags; the units replaced by the Systemd runtime's upgrader, no kubeadm
// upgrade), then the version upgrade node by node with the Service probed
// throughout: each unit's binary (spec.host.files, sha256-pinned, at a
// versioned path) and flags replaced one component at a time, kubeadm's
// cluster-level upgrade (kubeadm-config, kubelet configuration, addons)
// in-process. Afterwards every unit's running binary and every kubelet
// report the new version, etcd has both members, kubeadm-config names the
// new version, and a second run changes nothing.
func TestUpgradeSystemd(t *testing.T) {
	testUpgrade(t, true)
}

func testUpgrade(t *testing.T, systemd bool) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	stopAll(t, e) // a cluster of its own: the machines of earlier tests go
	if t.Failed() {
		return
	}
	name := "static-pods"
	if systemd {
		name = "systemd"
	}
	runDir := e.runDir
	defer func() { e.runDir = runDir }()
	e.runDir = filepath.Join(runDir, "upgrade-"+name)
	// The next test reuses the names: these machines go first, however
	// this one ends.
	defer stopAll(t, e)
	// The control-plane endpoint is a load balancer in front of cp1 and
	// cp2, as an HA cluster has (kubeadm's HA topology). With cp1's API
	// server as the endpoint, every client of the cluster (each node's
	// kube-proxy) loses its watches whenever that one API server
	// restarts during the upgrade, and client-go's reflectors back off
	// up to 30-60 s after repeated failures: a drain right after can
	// evict an echo pod whose endpoint some kube-proxy does not remove
	// for tens of seconds. (Probes failed, cp1 50 and w1 3, at the
	// start of cp2's drain, seconds after cp1's API server had come
	// back from the restart the new kubelet made after machineadm had
	// exited.)
	lbCtx, stopLB := context.WithCancel(ctx)
	lbLog := &guardedLog{logf: t.Logf}
	defer lbLog.close()
	defer stopLB()
	if _, err := startControlPlaneLB(lbCtx, func() []string { return []string{cp1.IP, cp2.IP} }, lbLog.Logf); err != nil {
		fatalln(t, err)
	}
	start := time.Now()
	c := bootPrevCluster(ctx, t, e, systemd, capiLBAddr)
	timing(t, "upgrade-"+name+"-bootstrap-v1.36", time.Since(start))
	if systemd {
		// The units' in-place reconfiguration first (the Systemd
		// runtime's upgrader, no kubeadm upgrade).
		start = time.Now()
		reconfigureAPIServer(ctx, t, c, prevKubernetesVersion, false)
		timing(t, "upgrade-"+name+"-reconfigure", time.Since(start))
	}
	start = time.Now()
	upgradeClusterNodes(ctx, t, e, c, !systemd)
	timing(t, "upgrade-"+name+"-upgrade", time.Since(start))
	if systemd {
		return
	}
	start = time.Now()
	reconfigureAPIServer(ctx, t, c, kubernetesVersion, true)
	timing(t, "upgrade-"+name+"-reconfigure", time.Since(start))
	start = time.Now()
	renewCertificates(ctx, t, c)
	timing(t, "upgrade-"+name+"-renew-certificates", time.Since(start))
}

// renewCertificates: cp1's certificates the API server, the controller
// manager and the scheduler use as clients aged to a day's validity
// (ageCertificates: the version upgrade just renewed them all for a
// year), cp1's spec (as reconfigured) with a renewal window of a week
// makes `machineadm upgrade` renew them, then restart the controller
// manager and the scheduler, one at a time, on the renewed client
// certificates they read only when they start (their mirror pods carry
// the certificates' digest), and neither the API server, which reloads
// its client certificates itself, nor etcd, which reads its certificates
// at each connection; the control plane is healthy after. A rerun renews
// nothing and restarts nothing.
func renewCertificates(ctx context.Context, t *testing.T, c *upgradeCluster) {
	m := c.cp1
	s, _ := c.reconfiguredSpec(t, kubernetesVersion, true)
	s.Spec.ControlPlane.PKI.RenewBefore = "168h"
	if err := deliver(m, s, c.secrets); err != nil {
		fatalln(t, err)
	}
	// The ones the cluster CA signs (front-proxy-client and
	// apiserver-etcd-client have CAs of their own).
	if err := ageCertificates(m, []string{"apiserver-kubelet-client.crt"}, []string{"controller-manager.conf", "scheduler.conf"}); err != nil {
		fatalf(t, "cp1: ageing the client certificates: %v", err)
	}
	restarted := []string{"kube-controller-manager", "kube-scheduler"}
	kept := []string{"etcd", "kube-apiserver"}
	before := map[string][]int{}
	for _, comp := range append(kept, restarted...) {
		before[comp] = processPIDs(m, comp)
	}
	res, dur := runUpgrade(ctx, t, m, "renew-certificates")
	timing(t, "renew-certificates-cp1", dur)
	out := res.Stdout + res.Stderr
	if res.ExitCode != 0 {
		fatalf(t, "cp1: the renewing upgrade exited %d:\n%s", res.ExitCode, tail(out, 40))
	}
	for _, cert := range []string{"renewed apiserver-kubelet-client", "renewed controller-manager.conf", "renewed scheduler.conf"} {
		if !strings.Contains(out, cert) {
			errorf(t, "cp1: the renewing upgrade does not say %q:\n%s", cert, tail(out, 40))
		}
	}
	for _, comp := range restarted {
		var now []int
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
			now = processPIDs(m, comp)
			return len(now) == 1 && !slices.Contains(before[comp], now[0]), nil
		}); err != nil {
			errorf(t, "cp1: %s not restarted on its renewed certificates (pids %v, then %v)", comp, before[comp], now)
			continue
		}
		p, err := c.cs.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, comp+"-"+m.Name, metav1.GetOptions{})
		if err != nil || !strings.HasPrefix(p.Annotations["machineadm.io/certificates-digest"], "sha256:") {
			errorf(t, "cp1: %s's mirror pod carries no certificates digest: %v", comp, err)
		}
	}
	for _, comp := range kept {
		if now := processPIDs(m, comp); !slices.Equal(now, before[comp]) {
			errorf(t, "cp1: %s restarted (%v, then %v); it reloads its certificates itself", comp, before[comp], now)
		}
	}
	if err := waitControlPlaneHealthy(ctx, c, 3*time.Minute); err != nil {
		errorf(t, "after the certificate renewal: %v", err)
	}
	after := map[string][]int{}
	for _, comp := range restarted {
		after[comp] = processPIDs(m, comp)
	}
	res, _ = runUpgrade(ctx, t, m, "renew-certificates-again")
	out = res.Stdout + res.Stderr
	if res.ExitCode != 0 || strings.Contains(out, "renewed ") {
		errorf(t, "cp1: the rerun exited %d or renewed again:\n%s", res.ExitCode, tail(out, 30))
	}
	for _, comp := range restarted {
		if now := processPIDs(m, comp); !slices.Equal(now, after[comp]) {
			errorf(t, "cp1: the rerun restarted %s (%v, then %v)", comp, after[comp], now)
		}
	}
}

// guardedLog passes lines to logf until close: a goroutine that outlives
// the test (the load balancer's health checks) must not log after it.
type guardedLog struct {
	mu     sync.Mutex
	closed bool
	logf   func(string, ...any)
}

// Logf logs through logf unless closed.
func (g *guardedLog) Logf(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.logf(format, args...)
	}
}

func (g *guardedLog) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

// stopAll stops every machine of the run.
func stopAll(t *testing.T, e *env) {
	e.mu.Lock()
	all := append([]*Machine(nil), e.machines...)
	e.mu.Unlock()
	for _, m := range all {
		if err := e.stopMachine(m); err != nil {
			errorln(t, err)
		}
	}
}

// upgradeSpec is node's spec at version: the e2e spec, the kubelet
// delivered by spec.host.files from the cached binaries (sha256-pinned),
// and for a Systemd control plane its binaries at versioned paths, also
// by spec.host.files.
func (c *upgradeCluster) upgradeSpec(e *env, node hostsEntry, version string) (*v1alpha1.MachineBootstrapConfig, error) {
	s, err := upgradeNodeSpec(e, c.secrets.caHash, node, version, c.systemd)
	if err != nil || c.endpoint == "" {
		return s, err
	}
	s.Spec.Kubernetes.ControlPlaneEndpoint = c.endpoint
	if s.Spec.Join != nil {
		s.Spec.Join.APIServerEndpoint = c.endpoint
	}
	return s, nil
}

// upgradeNodeSpec is upgradeSpec for a cluster whose CA has caHash (cp1
// initialises, cp2 joins as a control plane, any other joins as a worker).
func upgradeNodeSpec(e *env, caHash string, node hostsEntry, version string, systemd bool) (*v1alpha1.MachineBootstrapConfig, error) {
	var s *v1alpha1.MachineBootstrapConfig
	switch node {
	case cp1:
		s = controlPlaneSpec(cp1, v1alpha1.ActionInit, "")
	case cp2:
		s = controlPlaneSpec(cp2, v1alpha1.ActionJoin, caHash)
	default:
		s = workerSpec(node, caHash)
	}
	s.Spec.Kubernetes.Version = version
	binDir, src := e2eBinDir, func(n string) string { return e.binPath(n) }
	if version == prevKubernetesVersion {
		binDir, src = e2ePrevBinDir, e.prevBinPath
	}
	file := func(path, name string) (machineadm.File, error) {
		sum, err := fileSHA256(src(name))
		if err != nil {
			return machineadm.File{}, err
		}
		return machineadm.File{Path: path, Mode: "0755", Source: &machineadm.RemoteSource{URL: "file://" + binDir + "/" + name, SHA256: sum}}, nil
	}
	f, err := file("/usr/bin/kubelet", "kubelet")
	if err != nil {
		return nil, err
	}
	s.Spec.Host.Files = append(s.Spec.Host.Files, f)
	if systemd && s.Spec.ControlPlane != nil {
		s = systemdSpec(s)
		b := &machineadm.ControlPlaneBinaries{
			// etcd is the same v3.7.0 in both (kubeadm's etcd for 1.36 and 1.37).
			Etcd:                  "/usr/local/bin/etcd",
			KubeAPIServer:         "/usr/local/bin/kube-apiserver-" + version,
			KubeControllerManager: "/usr/local/bin/kube-controller-manager-" + version,
			KubeScheduler:         "/usr/local/bin/kube-scheduler-" + version,
		}
		s.Spec.ControlPlane.Binaries = b
		for _, p := range []string{b.KubeAPIServer, b.KubeControllerManager, b.KubeScheduler} {
			f, err := file(p, strings.TrimSuffix(filepath.Base(p), "-"+version))
			if err != nil {
				return nil, err
			}
			s.Spec.Host.Files = append(s.Spec.Host.Files, f)
		}
		sum, err := fileSHA256(e.binPath("etcd"))
		if err != nil {
			return nil, err
		}
		s.Spec.Host.Files = append(s.Spec.Host.Files, machineadm.File{Path: b.Etcd, Mode: "0755",
			Source: &machineadm.RemoteSource{URL: "file://" + e2eBinDir + "/etcd", SHA256: sum}})
	}
	return s, nil
}

// bootPrevCluster boots cp1, cp2 and w1 with the previous minor's kubelet
// and images and bootstraps them at prevKubernetesVersion.
func bootPrevCluster(ctx context.Context, t *testing.T, e *env, systemd bool, endpoint string) *upgradeCluster {
	secrets, err := e.makeSecrets(ctx, filepath.Join(e.runDir, "pki"))
	if err != nil {
		fatalln(t, err)
	}
	start := time.Now()
	ms := e.bootMachinesWith(ctx, t, bootOptions{prepare: e.prepareUpgradeMachine}, cp1, cp2, w1)
	timing(t, "upgrade-boot-cp1-cp2-w1", time.Since(start))
	c := &upgradeCluster{secrets: secrets, cp1: ms[0], cp2: ms[1], w1: ms[2], systemd: systemd, endpoint: endpoint}
	for _, d := range []struct {
		m      *Machine
		node   hostsEntry
		phases []string
	}{{c.cp1, cp1, initPhases}, {c.cp2, cp2, controlPlaneJoinPhases}, {c.w1, w1, workerJoinPhases}} {
		s, err := c.upgradeSpec(e, d.node, prevKubernetesVersion)
		if err != nil {
			fatalln(t, err)
		}
		if err := deliver(d.m, s, secrets); err != nil {
			fatalln(t, err)
		}
		mustBootstrap(ctx, t, d.m, d.phases, true)
		if d.m == c.cp1 {
			if c.cs, err = adminClient(c.cp1); err != nil {
				fatalln(t, err)
			}
			if err := keepConntrackMax(ctx, c.cs); err != nil {
				fatalln(t, err)
			}
		}
	}
	if _, err := waitNodesReady(ctx, c.cs, readyTimeout, cp1.Name, cp2.Name, w1.Name); err != nil {
		dumpDiagnostics(ctx, t, c.machines()...)
		fatalln(t, err)
	}
	if err := waitDaemonPodsRunning(ctx, c.cs, "kube-proxy", podTimeout, cp1.Name, cp2.Name, w1.Name); err != nil {
		dumpDiagnostics(ctx, t, c.machines()...)
		fatalln(t, err)
	}
	if err := checkVersions(ctx, c, prevKubernetesVersion); err != nil {
		fatalf(t, "the cluster before the upgrade: %v", err)
	}
	t.Logf("cluster at %s: cp1, cp2 (runtime Systemd: %v), w1 Ready", prevKubernetesVersion, systemd)
	return c
}

// upgradeClusterNodes upgrades cp1, cp2 and w1 in that order to
// kubernetesVersion with `machineadm upgrade`, the echo Service probed
// from every node throughout; with kills, cp1's upgrade is killed in
// upgradeKills' phases first.
func upgradeClusterNodes(ctx context.Context, t *testing.T, e *env, c *upgradeCluster, kills bool) {
	clusterIP, err := startEchoService(ctx, c.cs, podTimeout)
	if err != nil {
		dumpDiagnostics(ctx, t, c.machines()...)
		fatalln(t, err)
	}
	for _, m := range c.machines() {
		// The probe must be able to fail: it reaches the echo Service
		// and not one without endpoints, before it starts counting.
		if err := routeServices(ctx, m); err != nil {
			fatalln(t, err)
		}
		if err := checkProbeMeasures(ctx, c.cs, m, clusterIP, time.Minute); err != nil {
			dumpDiagnostics(ctx, t, c.machines()...)
			fatalln(t, err)
		}
		if err := startProbe(ctx, m, clusterIP); err != nil {
			fatalln(t, err)
		}
	}
	probing := time.Now()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go watchEchoEndpoints(wctx, c.cs, t.Logf)
	var once sync.Once
	finishProbes := func() {
		once.Do(func() {
			stopWatch()
			timing(t, "upgrade-probed", time.Since(probing))
			for _, m := range c.machines() {
				st, err := stopProbe(ctx, m)
				if err != nil {
					errorln(t, err)
					continue
				}
				t.Logf("probe of the echo Service from %s: %s", m.Name, st)
				if st.failed > 0 {
					errorf(t, "probe from %s: %d of %d probes of the Service failed during the upgrade (target 0)", m.Name, st.failed, st.total)
					t.Logf("%s: kube-proxy's log:\n%s", m.Name, kubeProxyLogTail(m, 40))
				}
				if st.total == 0 {
					errorf(t, "probe from %s ran no probe", m.Name)
				}
			}
		})
	}
	defer finishProbes()
	if out, err := exec.CommandContext(ctx, e.machineadm, "upgrade", "--help").CombinedOutput(); err != nil {
		time.Sleep(10 * time.Second)
		for _, m := range c.machines() {
			st, err := stopProbe(ctx, m)
			t.Logf("probe of the echo Service from %s for 10 s: %s %v", m.Name, st, err)
		}
		fatalf(t, "this machineadm has no upgrade command: %v\n%s", err, out)
	}
	for i, m := range c.machines() {
		node := []hostsEntry{cp1, cp2, w1}[i]
		s, err := c.upgradeSpec(e, node, kubernetesVersion)
		if err != nil {
			fatalln(t, err)
		}
		if err := deliver(m, s, c.secrets); err != nil {
			fatalln(t, err)
		}
		if kills && m == c.cp1 {
			upgradeCrashChain(ctx, t, m)
		}
		var flags []string
		if m == c.w1 {
			// A worker has no credential that may evict pods: the
			// cluster's admin.conf, delivered for the drain (0600).
			b, err := os.ReadFile(filepath.Join(c.cp1.Root, "etc/kubernetes/admin.conf"))
			if err != nil {
				fatalln(t, err)
			}
			if err := m.WriteFile(drainKubeconfig, b, 0o600); err != nil {
				fatalln(t, err)
			}
			flags = []string{"--kubeconfig", drainKubeconfig}
		}
		t.Logf("%s: machineadm upgrade starts at %s", m.Name, time.Now().UTC().Format("15:04:05.000"))
		res, dur := runUpgrade(ctx, t, m, "upgrade", flags...)
		t.Logf("%s: machineadm upgrade exited at %s", m.Name, time.Now().UTC().Format("15:04:05.000"))
		timing(t, "upgrade-"+m.Name, dur)
		if res.ExitCode != 0 {
			dumpDiagnostics(ctx, t, m)
			fatalf(t, "%s: machineadm upgrade exited %d:\n%s", m.Name, res.ExitCode, tail(res.Stdout+res.Stderr, 40))
		}
		if r, raw, err := readReport(m); err != nil {
			errorf(t, "%s: %v", m.Name, err)
		} else if r.Result != "Succeeded" {
			errorf(t, "%s: upgrade report %s\n%s", m.Name, r.summary(), raw)
		} else {
			t.Logf("%s upgrade report: %s", m.Name, r.summary())
		}
		if _, err := waitNodesReady(ctx, c.cs, readyTimeout, m.Name); err != nil {
			errorln(t, err)
		}
		// The node's control plane is healthy when machineadm exits, with
		// no grace: an operator goes on to the next node at once. (The
		// kubelet of the new version used to restart the node's static
		// pods some seconds after machineadm was done.) What it promises
		// is its own node's (docs/upgrade.md, "Order for an HA
		// cluster"): the other control plane's controller manager and
		// scheduler may still be coming back from the loss of quorum
		// while this node's etcd restarted (two members), which the
		// cluster-wide wait below bounds.
		after := time.Now()
		if err := controlPlaneHealthyNow(ctx, c, m); err != nil {
			errorf(t, "right after %s's upgrade exited: %v", m.Name, err)
		}
		if err := waitControlPlaneHealthy(ctx, c, 3*time.Minute); err != nil {
			dumpDiagnostics(ctx, t, m)
			fatalf(t, "after %s's upgrade: %v", m.Name, err)
		}
		timing(t, "upgrade-"+m.Name+"-exit-to-control-plane-healthy", time.Since(after))
	}
	finishProbes()
	if err := checkVersions(ctx, c, kubernetesVersion); err != nil {
		errorln(t, err)
	}
	members, err := etcdMembers(ctx, c.cp1)
	if err != nil || len(members) != 2 {
		errorf(t, "etcd members after the upgrade: %v, %v; want cp1 and cp2", members, err)
	}
	// kubeadm-config names the new version and carries the spec's API
	// server settings: on a Systemd control plane the version upgrade
	// also drops the reconfiguration's audit flags (the spec has none),
	// which machineadm stores before kubeadm's upload-config stores the
	// version.
	if err := checkKubeadmConfig(ctx, c.cs, kubernetesVersion, nil, []string{"audit-log-path", "audit-policy-file"}); err != nil {
		errorf(t, "after the upgrade: %v", err)
	}
	// A second upgrade to the same spec changes nothing.
	res, _ := runUpgrade(ctx, t, c.cp2, "upgrade-again")
	if res.ExitCode != 0 {
		errorf(t, "cp2: a second upgrade to the same spec exited %d", res.ExitCode)
	} else if r, raw, err := readReport(c.cp2); err == nil {
		for _, p := range r.Phases {
			if p.Status == "Succeeded" && !slices.Contains([]string{"inputs-check", upgrade.PhasePlan, "host-check", upgrade.PhaseRecord}, p.Name) {
				errorf(t, "cp2: the second upgrade to the same spec ran %s (%s)\n%s", p.Name, p.Message, raw)
			}
		}
	}
}

// upgradeCrashChain kills cp1's upgrade in each of upgradeKills' phases
// (each rerun resuming in the phase killed before) and checks that no kill
// left a Succeeded report.
func upgradeCrashChain(ctx context.Context, t *testing.T, m *Machine) {
	t.Helper()
	var prev *crashRun
	for i, k := range upgradeKills {
		run := killInRun(ctx, t, m, upgradeCrashCmd, upgrade.PhaseOrder, k.phase, k.at.orDefault(), i, prev != nil)
		if prev != nil {
			checkResumedIn(t, m, run.report, prev.phase)
		}
		r := run.report
		top, _, _ := strings.Cut(r.FailedPhase, "/")
		if r.Result == "Succeeded" || r.ErrorClass != "Interrupted" || top != run.phase {
			errorf(t, "%s: report after the kill in %s: result=%s errorClass=%s failedPhase=%s", m.Name, run.phase, r.Result, r.ErrorClass, r.FailedPhase)
		}
		if run.state.FinishedAt != "" {
			errorf(t, "%s: the upgrade journal says finished (%s) after the kill in %s", m.Name, run.state.FinishedAt, run.phase)
		}
		prev = run
	}
}

// runUpgrade runs `machineadm upgrade -f SPEC` in m, its output kept in
// m's directory as NAME.log.
func runUpgrade(ctx context.Context, t *testing.T, m *Machine, name string, flags ...string) (ExecResult, time.Duration) {
	t.Helper()
	uctx, cancel := context.WithTimeout(ctx, upgradeTimeout)
	defer cancel()
	start := time.Now()
	res, err := m.Exec(uctx, nil, append([]string{"machineadm", "upgrade", "-f", machineSpecFile}, flags...)...)
	dur := time.Since(start)
	_ = os.WriteFile(filepath.Join(m.Dir, name+".log"), []byte(res.Stdout+res.Stderr), 0o600)
	if err != nil {
		t.Logf("%s: %v (after %s); output tail:\n%s", m.Name, err, dur.Round(time.Second), tail(res.Stdout+res.Stderr, 40))
	}
	if uctx.Err() != nil {
		fatalf(t, "%s: machineadm upgrade did not finish within %s", m.Name, upgradeTimeout)
	}
	return res, dur
}

// checkVersions: every Node's kubelet, every control-plane component's
// running image (static pods) or the API servers' /version (both
// runtimes), and the kube-proxy DaemonSet are at version.
func checkVersions(ctx context.Context, c *upgradeCluster, version string) error {
	var errs []string
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, n := range nodes.Items {
		if v := n.Status.NodeInfo.KubeletVersion; v != version {
			errs = append(errs, fmt.Sprintf("node %s: kubelet %s", n.Name, v))
		}
	}
	for _, m := range []*Machine{c.cp1, c.cp2} {
		cs, err := nodeClient(m)
		if err != nil {
			return err
		}
		v, err := cs.Discovery().ServerVersion()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: API server /version: %v", m.Name, err))
		} else if v.GitVersion != version {
			errs = append(errs, fmt.Sprintf("%s: API server %s", m.Name, v.GitVersion))
		}
		if c.systemd {
			errs = append(errs, unitVersions(ctx, m, version)...)
			continue
		}
		for _, comp := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			p, err := c.cs.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, comp+"-"+m.Name, metav1.GetOptions{})
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			if img := p.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+version) {
				errs = append(errs, fmt.Sprintf("%s: %s runs %s", m.Name, comp, img))
			}
		}
	}
	ds, err := c.cs.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(ctx, "kube-proxy", metav1.GetOptions{})
	if err != nil {
		errs = append(errs, err.Error())
	} else if img := ds.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+version) {
		errs = append(errs, "kube-proxy DaemonSet runs "+img)
	}
	if len(errs) > 0 {
		return fmt.Errorf("not at %s: %s", version, strings.Join(errs, "; "))
	}
	return nil
}

// unitVersions: the binaries the Systemd runtime's units run on m (their
// main processes' executables) report version, and etcd's unit is
// active; one message per difference.
func unitVersions(ctx context.Context, m *Machine, version string) []string {
	var errs []string
	for _, u := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		res, err := m.Exec(ctx, nil, "sh", "-c", "exec /proc/$(systemctl show -p MainPID --value "+u+".service)/exe --version")
		if out := strings.TrimSpace(res.Stdout); err != nil || res.ExitCode != 0 || out != "Kubernetes "+version {
			errs = append(errs, fmt.Sprintf("%s: unit %s runs %q (exit %d, %v)", m.Name, u, out+res.Stderr, res.ExitCode, err))
		}
	}
	if res, err := m.Exec(ctx, nil, "systemctl", "is-active", "etcd.service"); err != nil || strings.TrimSpace(res.Stdout) != "active" {
		errs = append(errs, fmt.Sprintf("%s: etcd.service is %q (%v)", m.Name, strings.TrimSpace(res.Stdout), err))
	}
	return errs
}

// waitControlPlaneHealthy waits until both API servers answer /readyz
// and, for static pods, every control-plane static pod runs.
func waitControlPlaneHealthy(ctx context.Context, c *upgradeCluster, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, m := range []*Machine{c.cp1, c.cp2} {
		cs, err := nodeClient(m)
		if err != nil {
			return err
		}
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Until(deadline), true, func(ctx context.Context) (bool, error) {
			return cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil, nil
		})
		if err != nil {
			return fmt.Errorf("%s: the API server is not ready: %w", m.Name, err)
		}
		if !c.systemd {
			if err := waitStaticPodsRunning(ctx, c.cs, m.Name, time.Until(deadline)); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
		}
	}
	return nil
}

// controlPlaneHealthyNow checks once, with no wait, that m's control
// plane is healthy (nil for a worker): its API server answers /readyz
// and, for static pods, every control-plane static pod runs the
// kubelet's current manifest and is Ready (staticPodsCurrent).
func controlPlaneHealthyNow(ctx context.Context, c *upgradeCluster, m *Machine) error {
	if m != c.cp1 && m != c.cp2 {
		return nil
	}
	cs, err := nodeClient(m)
	if err != nil {
		return err
	}
	if err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
		return fmt.Errorf("%s: the API server is not ready: %w", m.Name, err)
	}
	if !c.systemd {
		if err := staticPodsCurrent(ctx, cs, m.Name); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return nil
}

// nodeClient is cp's admin.conf pointed at cp's own API server (the
// control-plane endpoint is cp1's).
func nodeClient(cp *Machine) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(cp.Root, "etc/kubernetes/admin.conf"))
	if err != nil {
		return nil, fmt.Errorf("admin.conf: %w", err)
	}
	cfg.Host = "https://" + cp.IP + ":6443"
	cfg.Timeout = 15 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// reconfigureAPIServer: cp1's spec at version gains an audit policy and
// an API server flag; `machineadm upgrade` restarts the API server once
// with them (its process watched every 200 ms), and a rerun plans no
// change and restarts nothing (the same process). With typed, the policy
// is the typed spec.controlPlane.apiServer.audit (issue U11: the
// apiserver-config step writes it, kubeadm regenerates the manifest with
// its flags and log volume) and audit events must then appear in its
// log; otherwise (the Systemd runtime's units) a spec.host.files policy
// and the audit flags in extraArgs, the audit log on standard output.
func reconfigureAPIServer(ctx context.Context, t *testing.T, c *upgradeCluster, version string, typed bool) {
	m := c.cp1
	s, wantFlags := c.reconfiguredSpec(t, version, typed)
	if err := deliver(m, s, c.secrets); err != nil {
		fatalln(t, err)
	}
	reconfigureCheck(ctx, t, c, m, version, typed, wantFlags)
}

// reconfiguredSpec is cp1's spec at version with the audit policy and
// API server flags of reconfigureAPIServer (typed: spec.controlPlane's
// typed audit settings; else a file and the flags), and the flags the new
// API server must run with.
func (c *upgradeCluster) reconfiguredSpec(t *testing.T, version string, typed bool) (*v1alpha1.MachineBootstrapConfig, []string) {
	s, err := c.upgradeSpec(theEnv, cp1, version)
	if err != nil {
		fatalln(t, err)
	}
	var wantFlags []string
	if typed {
		s.Spec.ControlPlane.APIServer.Audit = &machineadm.Audit{Policy: map[string]any{"rules": []any{
			map[string]any{"level": "Metadata", "resources": []any{map[string]any{"group": "", "resources": []any{"secrets"}}}},
			map[string]any{"level": "None"},
		}}}
		s.Spec.ControlPlane.APIServer.ExtraArgs = append(s.Spec.ControlPlane.APIServer.ExtraArgs, machineadm.Arg{Name: reconfigureFlag, Value: reconfigureFlagValue})
		wantFlags = []string{"--audit-policy-file=" + apiserverconfig.AuditPolicyFile, "--audit-log-path=" + machineadm.DefaultAuditLogPath, "--" + reconfigureFlag + "=" + reconfigureFlagValue}
	} else {
		s.Spec.Host.Files = append(s.Spec.Host.Files, machineadm.File{Path: auditPolicyPath, Mode: "0644", Content: auditPolicy})
		s.Spec.ControlPlane.APIServer.ExtraArgs = append(s.Spec.ControlPlane.APIServer.ExtraArgs,
			machineadm.Arg{Name: "audit-policy-file", Value: auditPolicyPath}, machineadm.Arg{Name: "audit-log-path", Value: "-"})
		// The unit hands the policy file to the process as a credential
		// (LoadCredential=, checked below): the flag names its copy.
		wantFlags = []string{"--audit-policy-file=/run/credentials/kube-apiserver.service/audit-policy-file", "--audit-log-path=-"}
	}
	return s, wantFlags
}

// reconfigureCheck runs the reconfiguring upgrade of m (its spec
// delivered) and checks reconfigureAPIServer's outcome.
func reconfigureCheck(ctx context.Context, t *testing.T, c *upgradeCluster, m *Machine, version string, typed bool, wantFlags []string) {
	before := processPIDs(m, "kube-apiserver")
	w := watchPIDs(m, "kube-apiserver")
	res, dur := runUpgrade(ctx, t, m, "reconfigure")
	timing(t, "reconfigure-cp1", dur)
	if res.ExitCode != 0 {
		w.stop()
		fatalf(t, "cp1: reconfiguring upgrade exited %d:\n%s", res.ExitCode, tail(res.Stdout+res.Stderr, 40))
	}
	if r, _, err := readReport(m); err == nil {
		t.Logf("cp1 reconfiguration report: %s", r.summary())
	}
	var after []int
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		after = processPIDs(m, "kube-apiserver")
		return len(after) == 1 && !slices.Contains(before, after[0]), nil
	})
	// Settle: a second restart would come within the kubelet's sync.
	time.Sleep(5 * time.Second)
	seen := w.stop()
	if err != nil {
		fatalf(t, "cp1: kube-apiserver before %v, after %v: not restarted", before, after)
	}
	// The processes seen: the old one and exactly one new one.
	if len(seen) != 2 {
		errorf(t, "cp1: kube-apiserver processes seen during the reconfiguration %v (before %v), want the old and one new", seen, before)
	} else {
		t.Logf("cp1: kube-apiserver restarted once (pid %v -> %v)", before, after)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", after[0]))
	missing := false
	for _, f := range wantFlags {
		if !strings.Contains(string(cmdline), f) {
			missing = true
			errorf(t, "cp1: the new kube-apiserver runs without %s: %q", f, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	if !typed {
		unit, err := m.ReadFile("/etc/systemd/system/kube-apiserver.service")
		if want := "LoadCredential=audit-policy-file:" + auditPolicyPath; err != nil || !strings.Contains(string(unit), want) {
			missing = true
			errorf(t, "cp1: kube-apiserver.service does not load the spec's policy file as the flag's credential (%s): %v", want, err)
		}
	}
	if missing {
		// What machineadm did and what the unit says now.
		t.Logf("cp1: the reconfiguring upgrade's output:\n%s", tail(res.Stdout+res.Stderr, 80))
		if u, err := m.Exec(ctx, nil, "sh", "-c", "systemctl cat kube-apiserver.service; systemctl show kube-apiserver.service -p ExecMainStartTimestamp -p ExecMainPID; journalctl -u kube-apiserver.service -o short-precise --no-pager | grep -E 'Start|Stop|start|stop' | tail -20"); err == nil {
			t.Logf("cp1: kube-apiserver.service:\n%s", u.Stdout)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.cs.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		errorf(t, "the API server does not answer after the reconfiguration: %v", err)
	}
	// The first control plane stored the new settings in kubeadm-config
	// (the static pods' and the Systemd runtime's upgraders alike): a
	// later kubeadm upgrade and a joining control plane read them there.
	stored := []string{"audit-log-path=-"}
	if typed {
		stored = []string{reconfigureFlag + "=" + reconfigureFlagValue}
	}
	if err := checkKubeadmConfig(ctx, c.cs, version, stored, nil); err != nil {
		errorf(t, "cp1: after the reconfiguration: %v", err)
	}
	if typed {
		// The policy at work: the Secrets list above (and any other
		// access to secrets) is an event at Metadata level in the log.
		var log string
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, _ = c.cs.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{Limit: 1})
			r, err := m.Exec(ctx, nil, "cat", machineadm.DefaultAuditLogPath)
			log = r.Stdout
			return err == nil && strings.Contains(log, `"resource":"secrets"`) && strings.Contains(log, `"level":"Metadata"`), nil
		})
		if err != nil {
			errorf(t, "cp1: no audit event for secrets in %s (%d bytes): %v\n%s", machineadm.DefaultAuditLogPath, len(log), err, tail(log, 5))
		} else {
			t.Logf("cp1: audit log %s has %d events", machineadm.DefaultAuditLogPath, strings.Count(log, "\n"))
		}
	}
	// The rerun: the plan says no change, nothing restarts.
	res, _ = runUpgrade(ctx, t, m, "reconfigure-again")
	if res.ExitCode != 0 {
		errorf(t, "cp1: rerun of the reconfiguration exited %d", res.ExitCode)
	}
	if !strings.Contains(res.Stdout+res.Stderr, "no change") {
		errorf(t, "cp1: the rerun's plan is not empty:\n%s", tail(res.Stdout+res.Stderr, 30))
	}
	if again := processPIDs(m, "kube-apiserver"); !slices.Equal(again, after) {
		errorf(t, "cp1: the rerun restarted kube-apiserver (%v, then %v)", after, again)
	}
}

// checkKubeadmConfig reads the ClusterConfiguration stored in the
// kube-system/kubeadm-config ConfigMap: it must name version and carry
// each of has ("name=value") among the API server's extra arguments and
// none named in lacks.
func checkKubeadmConfig(ctx context.Context, cs kubernetes.Interface, version string, has, lacks []string) error {
	cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "kubeadm-config", metav1.GetOptions{})
	if err != nil {
		return err
	}
	var cc kubeadmv1beta4.ClusterConfiguration
	if err := yaml.Unmarshal([]byte(cm.Data["ClusterConfiguration"]), &cc); err != nil {
		return fmt.Errorf("kubeadm-config's ClusterConfiguration: %w", err)
	}
	var args []string
	names := map[string]bool{}
	for _, a := range cc.APIServer.ExtraArgs {
		args = append(args, a.Name+"="+a.Value)
		names[a.Name] = true
	}
	var bad []string
	if cc.KubernetesVersion != version {
		bad = append(bad, "kubernetesVersion "+cc.KubernetesVersion+", want "+version)
	}
	for _, a := range has {
		if !slices.Contains(args, a) {
			bad = append(bad, "no API server argument "+a)
		}
	}
	for _, n := range lacks {
		if names[n] {
			bad = append(bad, "API server argument "+n+" the spec does not set")
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("kube-system/kubeadm-config: %s:\n%s", strings.Join(bad, "; "), cm.Data["ClusterConfiguration"])
	}
	return nil
}

// The API server flag the typed reconfiguration adds beside the audit
// policy (not one the typed audit owns).
const (
	reconfigureFlag      = "request-timeout"
	reconfigureFlagValue = "90s"
)

// processPIDs are the host PIDs of m's processes whose command name
// starts with comm: the kernel truncates it to 15 bytes, so a versioned
// binary (kube-apiserver-v1.36.3) shows as "kube-apiserver-".
func processPIDs(m *Machine, comm string) []int {
	// The kernel keeps 15 bytes of a command's name ("kube-controller").
	if len(comm) > 15 {
		comm = comm[:15]
	}
	var out []int
	for _, p := range descendants(m.leader) {
		if strings.HasPrefix(commOf(p), comm) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// pidWatch samples processPIDs every 200 ms.
type pidWatch struct {
	mu   sync.Mutex
	seen []int
	done chan struct{}
	wg   sync.WaitGroup
}

func watchPIDs(m *Machine, comm string) *pidWatch {
	w := &pidWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			for _, p := range processPIDs(m, comm) {
				w.mu.Lock()
				if !slices.Contains(w.seen, p) {
					w.seen = append(w.seen, p)
				}
				w.mu.Unlock()
			}
			select {
			case <-w.done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return w
}

// stop ends the watch and returns every PID seen.
func (w *pidWatch) stop() []int {
	close(w.done)
	w.wg.Wait()
	return w.seen
}
