//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
)

// The control-plane units of the Systemd runtime, in start order.
var systemdUnits = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// Bounds of the Systemd scenario.
const (
	// healBound is how long the API may stay away after its process is
	// killed: the units' RestartSec (5s) plus the API server's start.
	healBound = 90 * time.Second
	// e2eBinDir is where the cached component binaries are mounted
	// read-only in the machines, for spec.host.files file:// sources.
	e2eBinDir = "/opt/machineadm-e2e/bin"
)

// TestSystemdControlPlane is the scenario of the Systemd control-plane
// runtime (spec.controlPlane.runtime: Systemd) on a cluster of its own:
// cp1 initialises with the binaries from the image, cp2 joins with its
// kube-scheduler delivered by spec.host.files (sha256-verified), w1 joins
// as a worker. Then: every node Ready; no control-plane pod exists (API and
// containerd); each unit active; /livez and /readyz ok; etcd has two
// members; a test pod runs on w1; killing kube-apiserver's process on cp1
// is healed by systemd within healBound; a rerun of bootstrap on cp1
// changes nothing.
func TestSystemdControlPlane(t *testing.T) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// A cluster of its own: the machines of earlier tests go first, and
	// this test's machines live in a directory of their own.
	e.mu.Lock()
	earlier := append([]*Machine(nil), e.machines...)
	e.mu.Unlock()
	for _, m := range earlier {
		if err := e.stopMachine(m); err != nil {
			fatalln(t, err)
		}
	}
	runDir := e.runDir
	e.runDir = filepath.Join(runDir, "systemd")
	defer func() { e.runDir = runDir }()

	secrets, err := e.makeSecrets(ctx, filepath.Join(e.runDir, "pki"))
	if err != nil {
		fatalln(t, err)
	}
	sum, err := fileSHA256(e.binPath("kube-scheduler"))
	if err != nil {
		fatalln(t, err)
	}
	prepare := func(m *Machine) error {
		m.BindRO = append(m.BindRO, filepath.Join(e.cache, "bin")+":"+e2eBinDir)
		if m.Name == w1.Name {
			return nil
		}
		for _, b := range systemdUnits {
			if m.Name == cp2.Name && b == "kube-scheduler" {
				continue // delivered by spec.host.files
			}
			if err := copyFile(e.binPath(b), filepath.Join(m.Root, "usr/local/bin", b), 0o755); err != nil {
				return err
			}
		}
		return nil
	}
	start := time.Now()
	ms := e.bootMachinesWith(ctx, t, bootOptions{prepare: prepare}, cp1, cp2, w1)
	timing(t, "systemd-boot-cp1-cp2-w1", time.Since(start))
	mcp1, mcp2, mw1 := ms[0], ms[1], ms[2]

	cp1Spec := systemdSpec(secureAPIServer(controlPlaneSpec(cp1, v1alpha1.ActionInit, "")))
	cp2Spec := systemdSpec(secureAPIServer(controlPlaneSpec(cp2, v1alpha1.ActionJoin, secrets.caHash)))
	cp2Spec.Spec.Host.Files = append(cp2Spec.Spec.Host.Files, v1alpha1.File{
		Path: "/usr/local/bin/kube-scheduler", Mode: "0755",
		Source: &v1alpha1.RemoteSource{URL: "file://" + e2eBinDir + "/kube-scheduler", SHA256: sum},
	})
	for _, d := range []struct {
		m *Machine
		s *v1alpha1.MachineBootstrapConfig
	}{{mcp1, cp1Spec}, {mcp2, cp2Spec}, {mw1, workerSpec(w1, secrets.caHash)}} {
		if err := deliver(d.m, d.s, secrets); err != nil {
			fatalln(t, err)
		}
	}

	for _, b := range []struct {
		m      *Machine
		phases []string
	}{{mcp1, initPhases}, {mcp2, controlPlaneJoinPhases}, {mw1, workerJoinPhases}} {
		mustBootstrap(ctx, t, b.m, b.phases, false)
		if t.Failed() {
			dumpSystemdDiagnostics(ctx, t, b.m)
			t.FailNow()
		}
	}
	cs, err := adminClient(mcp1)
	if err != nil {
		fatalln(t, err)
	}
	if _, err := waitNodesReady(ctx, cs, readyTimeout, cp1.Name, cp2.Name, w1.Name); err != nil {
		dumpSystemdDiagnostics(ctx, t, mcp1, mcp2)
		fatalln(t, err)
	}
	checkAPIServerSecurity(ctx, t, mcp1, cp1.IP, cs)
	checkDecryptsThrough(ctx, t, mcp1, mcp2, cp2.IP)
	for _, m := range []*Machine{mcp1, mcp2} {
		if err := checkControlPlaneNode(ctx, cs, m.Name); err != nil {
			errorln(t, err)
		}
		checkNoControlPlanePods(ctx, t, cs, m)
		checkUnitsActive(ctx, t, m)
	}
	for _, path := range []string{"/livez", "/readyz"} {
		body, err := cs.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if err != nil || strings.TrimSpace(string(body)) != "ok" {
			errorf(t, "%s: %q, %v", path, body, err)
		}
	}
	members, err := etcdMembers(ctx, mcp1)
	if err != nil {
		fatalln(t, err)
	}
	if len(members) != 2 {
		errorf(t, "etcd has members %v, want cp1 and cp2", members)
	}
	if _, err := runTestPod(ctx, cs, w1, podTimeout); err != nil {
		errorln(t, err)
	}
	logExposure(ctx, t, mcp1)

	t.Run("kill-apiserver-healed", func(t *testing.T) { checkAPIServerHealed(ctx, t, mcp1) })
	t.Run("rerun-no-op", func(t *testing.T) { checkRerunNoOp(ctx, t, mcp1) })
}

// systemdSpec switches a control-plane spec to the Systemd runtime (binary
// paths default to /usr/local/bin).
func systemdSpec(s *v1alpha1.MachineBootstrapConfig) *v1alpha1.MachineBootstrapConfig {
	s.Spec.ControlPlane.Runtime = v1alpha1.RuntimeSystemd
	return s
}

func fileSHA256(p string) (string, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// checkNoControlPlanePods: neither the API (mirror pods), nor the node's
// CRI (`crictl pods`, cri-tools built by components.sh, as the kubelet's
// runtime lists its pod sandboxes), nor containerd's k8s.io namespace
// knows a control-plane pod of the node.
func checkNoControlPlanePods(ctx context.Context, t *testing.T, cs kubernetes.Interface, m *Machine) {
	t.Helper()
	pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "tier=control-plane"})
	if err != nil {
		fatalln(t, err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == m.Name {
			errorf(t, "%s: control-plane pod %s exists", m.Name, p.Name)
		}
	}
	res, err := m.Exec(ctx, nil, e2eBinDir+"/crictl", "--runtime-endpoint", "unix:///run/containerd/containerd.sock",
		"pods", "--output", "json")
	if err != nil {
		fatalf(t, "%s: crictl pods: %v", m.Name, err)
	}
	sandboxes, err := parseCrictlPods(res.Stdout)
	if err != nil {
		fatalf(t, "%s: crictl pods: %v:\n%s", m.Name, err, res.Stdout)
	}
	for _, sb := range sandboxes {
		if sb.Labels["tier"] == "control-plane" || slices.ContainsFunc(systemdUnits, func(u string) bool {
			return strings.HasPrefix(sb.Metadata.Name, u+"-")
		}) {
			errorf(t, "%s: crictl pods lists control-plane pod %s/%s (%s)", m.Name, sb.Metadata.Namespace, sb.Metadata.Name, sb.State)
		}
	}
	t.Logf("%s: crictl pods: %d pod sandboxes, none of the control plane", m.Name, len(sandboxes))
	res, err = m.Exec(ctx, nil, "ctr", "--namespace", "k8s.io", "containers", "ls",
		`labels."io.kubernetes.pod.namespace"==kube-system`)
	if err != nil {
		fatalln(t, err)
	}
	for _, c := range systemdUnits {
		if strings.Contains(res.Stdout, "/"+c+":") {
			errorf(t, "%s: containerd runs a %s container:\n%s", m.Name, c, res.Stdout)
		}
	}
	if _, err := m.Exec(ctx, nil, "sh", "-c", `test -z "$(ls -A /etc/kubernetes/manifests 2>/dev/null)"`); err != nil {
		errorf(t, "%s: static pod manifests written: %v", m.Name, err)
	}
	kc, err := m.ReadFile("/var/lib/kubelet/config.yaml")
	if err != nil || strings.Contains(string(kc), "staticPodPath: /") {
		errorf(t, "%s: kubelet config still has a static pod path (%v):\n%s", m.Name, err, kc)
	}
}

// crictlPod is the part of a `crictl pods --output json` item the check
// reads (cri-api's PodSandbox: metadata, state, labels).
type crictlPod struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	State  string            `json:"state"`
	Labels map[string]string `json:"labels"`
}

// parseCrictlPods decodes `crictl pods --output json`; output without an
// items list (not crictl's pod listing) is an error, so the check cannot
// pass on an empty or foreign answer.
func parseCrictlPods(out string) ([]crictlPod, error) {
	var list struct {
		Items *[]crictlPod `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, err
	}
	if list.Items == nil {
		return nil, fmt.Errorf("no items list in the output")
	}
	return *list.Items, nil
}

// checkUnitsActive: `systemctl is-active` says active for every unit.
func checkUnitsActive(ctx context.Context, t *testing.T, m *Machine) {
	t.Helper()
	res, err := m.Exec(ctx, nil, append([]string{"systemctl", "is-active"}, systemdUnits...)...)
	if err != nil || strings.Count(res.Stdout, "active\n") != len(systemdUnits) || strings.Contains(res.Stdout, "inactive") {
		errorf(t, "%s: systemctl is-active: %q %v", m.Name, res.Stdout, err)
	}
}

// logExposure logs systemd-analyze security's exposure level of each unit
// as the node's systemd computes it.
func logExposure(ctx context.Context, t *testing.T, m *Machine) {
	for _, u := range systemdUnits {
		res, _ := m.Exec(ctx, nil, "systemd-analyze", "security", "--no-pager", u+".service")
		t.Logf("%s: %s", m.Name, strings.TrimSpace(tail(res.Stdout, 1)))
	}
}

func unitProperty(ctx context.Context, m *Machine, unit, prop string) (string, error) {
	res, err := m.Exec(ctx, nil, "systemctl", "show", "--value", "-p", prop, unit)
	return strings.TrimSpace(res.Stdout), err
}

// checkAPIServerHealed kills kube-apiserver's main process with SIGKILL
// and expects systemd to restart it and the API to answer /livez on cp1's
// own address within healBound.
func checkAPIServerHealed(ctx context.Context, t *testing.T, m *Machine) {
	pid, err := unitProperty(ctx, m, "kube-apiserver", "MainPID")
	if err != nil || pid == "0" || pid == "" {
		fatalf(t, "kube-apiserver MainPID %q: %v", pid, err)
	}
	restarts, _ := unitProperty(ctx, m, "kube-apiserver", "NRestarts")
	start := time.Now()
	if _, err := m.Exec(ctx, nil, "kill", "-KILL", pid); err != nil {
		fatalln(t, err)
	}
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := "https://" + net.JoinHostPort(m.IP, "6443") + "/livez"
	downSeen := false
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, healBound, true, func(ctx context.Context) (bool, error) {
		now, _ := unitProperty(ctx, m, "kube-apiserver", "MainPID")
		if now == pid || now == "0" {
			downSeen = true
			return false, nil
		}
		resp, err := client.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	healed := time.Since(start)
	timing(t, "systemd-apiserver-kill-to-livez", healed)
	if err != nil {
		dumpSystemdDiagnostics(ctx, t, m)
		fatalf(t, "the API did not answer %s within %s of the kill: %v", url, healBound, err)
	}
	after, _ := unitProperty(ctx, m, "kube-apiserver", "NRestarts")
	n0, _ := strconv.Atoi(restarts)
	n1, _ := strconv.Atoi(after)
	if n1 != n0+1 {
		errorf(t, "NRestarts %d → %d, want one restart by systemd (down seen: %v)", n0, n1, downSeen)
	}
	t.Logf("kube-apiserver killed (pid %s), restarted by systemd, /livez ok after %s", pid, healed.Round(100*time.Millisecond))
}

// checkRerunNoOp runs bootstrap again on cp1: it succeeds, every phase is
// Unchanged, and no unit file changed or unit restarted.
func checkRerunNoOp(ctx context.Context, t *testing.T, m *Machine) {
	before := map[string]string{}
	for _, u := range systemdUnits {
		st, err := os.Stat(filepath.Join(m.Root, "etc/systemd/system", u+".service"))
		if err != nil {
			fatalln(t, err)
		}
		pid, _ := unitProperty(ctx, m, u, "MainPID")
		before[u] = fmt.Sprintf("%s pid=%s", st.ModTime(), pid)
	}
	res, _ := bootstrap(ctx, t, m)
	if res.ExitCode != 0 {
		fatalf(t, "rerun exited %d", res.ExitCode)
	}
	r, raw, err := readReport(m)
	if err != nil {
		fatalln(t, err)
	}
	for _, p := range r.Phases {
		if p.Status != "Unchanged" {
			errorf(t, "rerun: phase %s %s, want Unchanged\n%s", p.Name, p.Status, raw)
		}
	}
	for _, u := range systemdUnits {
		st, _ := os.Stat(filepath.Join(m.Root, "etc/systemd/system", u+".service"))
		pid, _ := unitProperty(ctx, m, u, "MainPID")
		if now := fmt.Sprintf("%s pid=%s", st.ModTime(), pid); now != before[u] {
			errorf(t, "rerun changed %s: %s → %s", u, before[u], now)
		}
	}
}

// dumpSystemdDiagnostics logs the units' state and journal tails, and the
// owners and modes of the control-plane files.
func dumpSystemdDiagnostics(ctx context.Context, t *testing.T, ms ...*Machine) {
	for _, m := range ms {
		ls, _ := m.Exec(ctx, nil, "sh", "-c", "ls -ldn /etc/kubernetes /etc/kubernetes/* /etc/kubernetes/pki/* /etc/kubernetes/pki/etcd/* /var/lib/etcd 2>&1")
		t.Logf("%s files:\n%s", m.Name, ls.Stdout)
		for _, u := range systemdUnits {
			st, _ := m.Exec(ctx, nil, "systemctl", "status", "--no-pager", "-n", "0", u)
			j, _ := m.Exec(ctx, nil, "journalctl", "--no-pager", "-n", "20", "-u", u)
			t.Logf("%s %s:\n%s\n%s", m.Name, u, st.Stdout, j.Stdout)
		}
	}
	dumpDiagnostics(ctx, t, ms...)
}
