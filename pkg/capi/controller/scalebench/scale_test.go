//go:build scalebench

// Package scalebench is the side-by-side scale benchmark of the bootstrap
// provider (make bench-capi): N worker MachineadmConfigs reconciled by
// machineadm-controller against N KubeadmConfigs reconciled by Cluster
// API's own kubeadm bootstrap manager (capi-kubeadm-bootstrap, built from
// the Cluster API module), each alone, each as its real binary in its own
// process, against a fresh envtest API server (kube-apiserver and etcd
// from the e2e cache) holding the same CRDs and the same Cluster. Built
// only with the tag scalebench, so `make test` neither builds nor runs it.
package scalebench

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machineadm/machineadm/pkg/seal"
)

// Users the benchmark's API server tells apart in its audit log.
const (
	controllerUser = "bench-controller" // the controller's own kubeconfig
	workloadUser   = "bench-workload"   // the Cluster's <name>-kubeconfig Secret
	clusterName    = "bench"
	namespace      = "bench"
	// completionTimeout bounds one side's run.
	completionTimeout = 20 * time.Minute
)

// side is one provider under test.
type side struct {
	name       string
	binary     string
	group      string // the config's API group
	kind       string
	spec       func() map[string]any
	args       func(dir string, healthPort, webhookPort int) []string
	webhookDir bool // needs a serving certificate in dir/webhook
	profiler   bool // serves net/http/pprof on profilerAddr
}

// pprofDir and profilerAddr: SCALE_PPROF_DIR, and where machineadm-controller's
// profiler listens then.
var pprofDir, profilerAddr string

// result is what one side measured.
type result struct {
	ready, done      time.Duration // process start to healthy, to every data Secret
	peakRSS          int64         // bytes (VmHWM)
	cpu              time.Duration // user + system CPU time of the process
	requests         map[string]int
	byVerb           map[string]int
	secrets, configs int
	top              rssSample // the largest resident set sampled, in kB
}

func TestScaleSideBySide(t *testing.T) {
	logf.SetLogger(logr.Discard())
	n := 1000
	if s := os.Getenv("SCALE_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("SCALE_N=%q: want a positive count", s)
		}
		n = v
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	capiDir := os.Getenv("CAPI_MODULE_DIR")
	machineadm := os.Getenv("MACHINEADM_CONTROLLER")
	kubeadm := os.Getenv("CAPI_KUBEADM_BOOTSTRAP")
	for k, v := range map[string]string{"KUBEBUILDER_ASSETS": assets, "CAPI_MODULE_DIR": capiDir, "MACHINEADM_CONTROLLER": machineadm, "CAPI_KUBEADM_BOOTSTRAP": kubeadm} {
		if v == "" {
			t.Fatalf("%s is not set (make bench-capi sets it)", k)
		}
	}
	// SCALE_PPROF_DIR: machineadm-controller runs with its profiler, and
	// its heap and allocation profiles at the moment every data Secret
	// exists are written there (heap.pprof, allocs.pprof; heap.txt with
	// the Go runtime's memory statistics), and its log (controller.log).
	pprofDir = os.Getenv("SCALE_PPROF_DIR")
	if pprofDir != "" {
		profilerAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	}
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	sides := []side{
		{
			name: "machineadm", binary: machineadm, group: "bootstrap.machineadm.io", kind: "MachineadmConfig",
			spec: func() map[string]any {
				return map[string]any{
					"agent":      map[string]any{"url": "https://example.invalid/machineadm", "sha256": strings.Repeat("0123456789abcdef", 4)},
					"recipients": []any{id.Recipient()},
				}
			},
			args: func(dir string, health, _ int) []string {
				args := []string{"--leader-elect=false", "--metrics-bind-address=0", fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", health)}
				if pprofDir != "" {
					args = append(args, "--profiler-address="+profilerAddr)
				}
				return args
			},
			profiler: pprofDir != "",
		},
		kubeadmSide("kubeadm", kubeadm),
		// The same binary without its client-side rate limits (100 QPS to
		// the management cluster, 20 to workload clusters by default),
		// which otherwise bound its time here: machineadm-controller has
		// none.
		kubeadmSide("kubeadm-unthrottled", kubeadm, "--kube-api-qps=10000", "--kube-api-burst=10000",
			"--clustercache-client-qps=10000", "--clustercache-client-burst=10000"),
	}
	crdDirs := []string{
		filepath.Join(capiDir, "core/config/crd/bases"),
		filepath.Join(capiDir, "bootstrap/kubeadm/config/crd/bases"),
		"../../../../contrib/cluster-api/crd",
	}
	// SCALE_SIDES: a comma-separated subset of the sides to run, for
	// profiling one; the ratios need all three.
	if only := os.Getenv("SCALE_SIDES"); only != "" {
		var keep []side
		for _, s := range sides {
			if strings.Contains(","+only+",", ","+s.name+",") {
				keep = append(keep, s)
			}
		}
		sides = keep
	}
	results := map[string]*result{}
	for _, s := range sides {
		r := runSide(t, s, n, assets, crdDirs)
		results[s.name] = r
		t.Logf("%s: %d configs, all data Secrets %.1fs after the start (healthy after %.1fs), CPU %.1fs, peak RSS %.1f MiB (largest sampled %.1f MiB: anonymous %.1f, file-backed %.1f), API requests: controller %d, workload %d (%v)",
			s.name, r.configs, r.done.Seconds(), r.ready.Seconds(), r.cpu.Seconds(), float64(r.peakRSS)/(1<<20), float64(r.top.rss)/(1<<10), float64(r.top.anon)/(1<<10), float64(r.top.file)/(1<<10), r.requests[controllerUser], r.requests[workloadUser], r.byVerb)
	}
	m, k, u := results["machineadm"], results["kubeadm"], results["kubeadm-unthrottled"]
	if m == nil || k == nil || u == nil {
		return
	}
	perConfig := func(r *result) float64 {
		return float64(r.requests[controllerUser]+r.requests[workloadUser]) / float64(r.configs)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SCALE %d worker configs, each controller alone, concurrency 10 (u: kubeadm without client rate limits)\n", n)
	fmt.Fprintf(&b, "%-30s %11s %11s %11s %9s %9s\n", "", "machineadm", "kubeadm", "kubeadm u", "m/k", "m/u")
	row := func(name string, mv, kv, uv float64, unit string) {
		fmt.Fprintf(&b, "%-30s %10.1f%s %10.1f%s %10.1f%s %9.2f %9.2f\n", name, mv, unit, kv, unit, uv, unit, mv/kv, mv/uv)
	}
	row("start to every data Secret", m.done.Seconds(), k.done.Seconds(), u.done.Seconds(), "s")
	row("healthy to every data Secret", (m.done - m.ready).Seconds(), (k.done - k.ready).Seconds(), (u.done - u.ready).Seconds(), "s")
	row("controller CPU time", m.cpu.Seconds(), k.cpu.Seconds(), u.cpu.Seconds(), "s")
	row("controller peak RSS", float64(m.peakRSS)/(1<<20), float64(k.peakRSS)/(1<<20), float64(u.peakRSS)/(1<<20), "M")
	row("  at the largest sample: anon", float64(m.top.anon)/(1<<10), float64(k.top.anon)/(1<<10), float64(u.top.anon)/(1<<10), "M")
	row("  at the largest sample: file", float64(m.top.file)/(1<<10), float64(k.top.file)/(1<<10), float64(u.top.file)/(1<<10), "M")
	row("API requests per config", perConfig(m), perConfig(k), perConfig(u), " ")
	t.Log("\n" + b.String())
	fmt.Print(b.String())
}

// kubeadmSide is Cluster API's kubeadm bootstrap manager with extra flags.
func kubeadmSide(name, binary string, extra ...string) side {
	return side{
		name: name, binary: binary, group: "bootstrap.cluster.x-k8s.io", kind: "KubeadmConfig", webhookDir: true,
		// Its smallest worker spec: the schema wants one property.
		spec: func() map[string]any { return map[string]any{"format": "cloud-config"} },
		args: func(dir string, health, webhook int) []string {
			// Its default concurrency is 100; machineadm-controller's 10.
			return append([]string{"--leader-elect=false", "--diagnostics-address=0", fmt.Sprintf("--health-addr=127.0.0.1:%d", health),
				fmt.Sprintf("--webhook-port=%d", webhook), "--webhook-cert-dir=" + filepath.Join(dir, "webhook"),
				"--kubeadmconfig-concurrency=10"}, extra...)
		},
	}
}

// runSide starts a fresh API server with the CRDs, the Cluster, its CA and
// kubeconfig Secrets and n Machines with a worker config each, then the
// side's controller, and waits until every config names its data Secret
// and that Secret exists.
func runSide(t *testing.T, s side, n int, assets string, crdDirs []string) *result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	dir := t.TempDir()
	auditLog := filepath.Join(dir, "audit.log")
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: [%s, %s]
- level: None
`, controllerUser, workloadUser)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: crdDirs, ErrorIfCRDPathMissing: true}
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", auditLog).
		Set("audit-log-maxsize", "0")
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 2000, 2000
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigOf := func(user string) []byte {
		u, err := env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := u.KubeConfig()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	controllerKubeconfig := filepath.Join(dir, "controller.kubeconfig")
	if err := os.WriteFile(controllerKubeconfig, kubeconfigOf(controllerUser), 0o600); err != nil {
		t.Fatal(err)
	}
	setupCluster(ctx, t, c, cfg, kubeconfigOf(workloadUser))
	createConfigs(ctx, t, c, s, n)

	health, webhook := freePort(t), freePort(t)
	if s.webhookDir {
		writeServingCert(t, filepath.Join(dir, "webhook"))
	}
	logPath := filepath.Join(dir, s.name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	dropPageCache(t, s.binary)
	cmd := exec.Command(s.binary, s.args(dir, health, webhook)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+controllerKubeconfig, "TMPDIR="+dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopSampling := make(chan struct{})
	sampled := sampleRSS(cmd.Process.Pid, stopSampling)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	fail := func(format string, a ...any) {
		t.Helper()
		b, _ := os.ReadFile(logPath)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		// The first errors it logged (often the cause), then its last
		// lines.
		var first []string
		for _, l := range lines {
			if len(first) < 5 && (strings.HasPrefix(l, "E") || strings.Contains(l, `"level":"error"`)) {
				first = append(first, l)
			}
		}
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		t.Fatalf("%s: %s\nfirst errors in its log:\n%s\nlast lines of its log:\n%s", s.name, fmt.Sprintf(format, a...), strings.Join(first, "\n"), strings.Join(lines, "\n"))
	}
	r := &result{configs: n}
	for r.ready == 0 {
		select {
		case err := <-exited:
			exited <- err
			fail("exited: %v", err)
		case <-ctx.Done():
			fail("not healthy")
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/readyz", health)); err == nil && resp == 200 {
			r.ready = time.Since(start)
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(s.group + "/" + versionOf(s.group))
	list.SetKind(s.kind + "List")
	var names map[string]bool
	for {
		select {
		case err := <-exited:
			exited <- err
			fail("exited: %v", err)
		case <-ctx.Done():
			fail("%d of %d configs have a data Secret after %s", len(names), n, completionTimeout)
		case <-time.After(250 * time.Millisecond):
		}
		if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
			continue
		}
		names = map[string]bool{}
		for _, o := range list.Items {
			if v, _, _ := unstructured.NestedString(o.Object, "status", "dataSecretName"); v != "" {
				names[v] = true
			}
		}
		if len(names) == n {
			r.done = time.Since(start)
			break
		}
	}
	r.peakRSS = peakRSS(t, cmd.Process.Pid)
	close(stopSampling)
	r.top = <-sampled
	r.cpu = cpuTime(t, cmd.Process.Pid)
	if s.profiler {
		for p, file := range map[string]string{"heap": "heap.pprof", "allocs": "allocs.pprof", "heap?debug=1": "heap.txt"} {
			if err := saveProfile("http://"+profilerAddr+"/debug/pprof/"+p, filepath.Join(pprofDir, file)); err != nil {
				t.Errorf("%s profile: %v", p, err)
			}
		}
		defer func() {
			// Its log too, once it stopped (controller.log).
			if b, err := os.ReadFile(logPath); err == nil {
				_ = os.WriteFile(filepath.Join(pprofDir, "controller.log"), b, 0o600)
			}
		}()
	}
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	for _, sec := range secrets.Items {
		if names[sec.Name] && len(sec.Data["value"]) > 0 {
			r.secrets++
		}
	}
	if r.secrets != n {
		fail("%d data Secrets with a value, want %d", r.secrets, n)
	}
	// Stop the controller so its last requests are in the log, then let
	// the API server flush it.
	_ = cmd.Process.Kill()
	<-exited
	exited <- nil
	time.Sleep(time.Second)
	r.requests, r.byVerb = countRequests(t, auditLog)
	return r
}

func versionOf(group string) string {
	if group == "bootstrap.machineadm.io" {
		return "v1alpha1"
	}
	return "v1beta2"
}

// setupCluster creates the namespace, the Cluster (infrastructure
// provisioned, control plane initialised, its endpoint this API server),
// its CA Secret and its kubeconfig Secret (the workload cluster is this
// same API server, as user workloadUser).
func setupCluster(ctx context.Context, t *testing.T, c client.Client, cfg *rest.Config, workloadKubeconfig []byte) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	u, err := url.Parse(cfg.Host)
	must(err)
	port, err := strconv.Atoi(u.Port())
	must(err)
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": clusterName, "namespace": namespace},
		"spec": map[string]any{
			"controlPlaneEndpoint": map[string]any{"host": u.Hostname(), "port": int64(port)},
			"clusterNetwork": map[string]any{
				"pods":     map[string]any{"cidrBlocks": []any{"10.244.0.0/16"}},
				"services": map[string]any{"cidrBlocks": []any{"10.96.0.0/12"}},
			},
		},
	}}
	must(c.Create(ctx, cluster))
	now := metav1.Now().UTC().Format(time.RFC3339)
	cluster.Object["status"] = map[string]any{
		"initialization": map[string]any{"infrastructureProvisioned": true, "controlPlaneInitialized": true},
		"conditions":     []any{map[string]any{"type": "ControlPlaneInitialized", "status": "True", "reason": "Bench", "message": "", "lastTransitionTime": now}},
	}
	must(c.Status().Update(ctx, cluster))
	crt, key := newCA(t)
	labels := map[string]string{"cluster.x-k8s.io/cluster-name": clusterName}
	must(c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clusterName + "-ca", Namespace: namespace, Labels: labels},
		Type:       "cluster.x-k8s.io/secret",
		Data:       map[string][]byte{"tls.crt": crt, "tls.key": key},
	}))
	must(c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clusterName + "-kubeconfig", Namespace: namespace, Labels: labels},
		Type:       "cluster.x-k8s.io/secret",
		Data:       map[string][]byte{"value": workloadKubeconfig},
	}))
}

// createConfigs creates n worker Machines, each with a config of the
// side's kind owned by it, 16 at a time.
func createConfigs(ctx context.Context, t *testing.T, c client.Client, s side, n int) {
	t.Helper()
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fmt.Sprintf("w%04d", i)
				m := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
					"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{"cluster.x-k8s.io/cluster-name": clusterName}},
					"spec": map[string]any{
						"clusterName": clusterName, "version": "v1.37.2",
						"bootstrap":         map[string]any{"configRef": map[string]any{"apiGroup": s.group, "kind": s.kind, "name": name}},
						"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "BenchMachine", "name": name},
					},
				}}
				if err := c.Create(ctx, m); err != nil {
					errs <- err
					continue
				}
				cfg := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": s.group + "/" + versionOf(s.group), "kind": s.kind,
					"metadata": map[string]any{
						"name": name, "namespace": namespace, "labels": map[string]any{"cluster.x-k8s.io/cluster-name": clusterName},
						"ownerReferences": []any{map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": name, "uid": string(m.GetUID())}},
					},
					"spec": s.spec(),
				}}
				if err := c.Create(ctx, cfg); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating Machines and configs: %v", err)
	}
}

// countRequests reads the audit log: distinct requests (audit IDs) per
// user, and the controller's and workload user's together by verb and
// resource.
func countRequests(t *testing.T, path string) (map[string]int, map[string]int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	byUser, byVerb := map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			AuditID   string `json:"auditID"`
			Verb      string `json:"verb"`
			User      struct{ Username string }
			ObjectRef *struct{ Resource string }
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || seen[ev.AuditID] {
			continue
		}
		seen[ev.AuditID] = true
		byUser[ev.User.Username]++
		res := ""
		if ev.ObjectRef != nil {
			res = ev.ObjectRef.Resource
		}
		byVerb[ev.Verb+" "+res]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if byUser[controllerUser] == 0 {
		t.Fatalf("audit log %s: no request of %s", path, controllerUser)
	}
	return byUser, topN(byVerb, 8)
}

func topN(m map[string]int, n int) map[string]int {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v })
	out := map[string]int{}
	for i := 0; i < len(l) && i < n; i++ {
		out[l[i].k] = l[i].v
	}
	return out
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status: no VmHWM", pid)
	return 0
}

// rssSample is one reading of a process's resident set, in kB: in all,
// anonymous (the Go heap, GC metadata, stacks) and file-backed (the
// binary's code and read-only data it touched), from /proc/PID/status.
type rssSample struct{ rss, anon, file int64 }

// readRSS reads pid's resident set; ok false when it cannot.
func readRSS(pid int) (rssSample, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return rssSample{}, false
	}
	var s rssSample
	for _, l := range strings.Split(string(b), "\n") {
		for k, dst := range map[string]*int64{"VmRSS:": &s.rss, "RssAnon:": &s.anon, "RssFile:": &s.file} {
			if v, ok := strings.CutPrefix(l, k); ok {
				*dst, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
		}
	}
	return s, true
}

// sampleRSS reads pid's resident set every 50 ms until stop is closed and
// sends the reading with the largest resident set, so that the peak
// (VmHWM) can be told apart into anonymous and file-backed memory.
func sampleRSS(pid int, stop <-chan struct{}) <-chan rssSample {
	out := make(chan rssSample, 1)
	go func() {
		var top rssSample
		for {
			if s, ok := readRSS(pid); ok && s.rss > top.rss {
				top = s
			}
			select {
			case <-stop:
				out <- top
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return out
}

// cpuTime is the process's user and system CPU time so far
// (/proc/PID/stat fields 14 and 15, in clock ticks of 1/100 s: Linux's
// USER_HZ on every architecture Go supports here).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name (field 2) may hold spaces; fields after its ")".
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func newCA(t *testing.T) ([]byte, []byte) {
	t.Helper()
	return selfSigned(t, "kubernetes", true)
}

// writeServingCert writes a self-signed loopback serving certificate as
// tls.crt and tls.key into dir: the kubeadm manager's webhook server
// starts only with one (nothing calls it here).
func writeServingCert(t *testing.T, dir string) {
	t.Helper()
	crt, key := selfSigned(t, "127.0.0.1", false)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func selfSigned(t *testing.T, cn string, ca bool) ([]byte, []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, BasicConstraintsValid: true,
	}
	if ca {
		tmpl.IsCA, tmpl.KeyUsage = true, tmpl.KeyUsage|x509.KeyUsageCertSign
	} else {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// httpGet is the status code of a GET of u, within 2 s.
func httpGet(u string) (int, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// saveProfile writes the profile at u to path.
func saveProfile(u, path string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
