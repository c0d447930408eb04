package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/machineadm/machineadm/pkg/cmd"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/spec"
)

// TestMain lets the test binary act as machineadm when re-executed with
// MACHINEADM_TEST_EXEC=1, so tests can run it in a private network
// namespace (unshare --net): nothing a test runs can reach an address
// from an example spec.
func TestMain(m *testing.M) {
	if os.Getenv("MACHINEADM_TEST_EXEC") == "1" {
		// MACHINEADM_TEST_TRAP=HOST:PORT listens there (in the run's own
		// network namespace) and says how many connections it took: a
		// dry run must take none.
		var trapped atomic.Int32
		if addr := os.Getenv("MACHINEADM_TEST_TRAP"); addr != "" {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, "TEST-TRAP:", err)
				os.Exit(99)
			}
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					trapped.Add(1)
					c.Close()
				}
			}()
		}
		code := cmd.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		if n := trapped.Load(); n > 0 {
			fmt.Fprintf(os.Stderr, "TEST-TRAP: %d connection(s) to %s\n", n, os.Getenv("MACHINEADM_TEST_TRAP"))
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// machineadm runs the test binary as machineadm in a new network namespace
// (only its loopback interface, up: a join's dry run serves its stand-in
// cluster-info there) and returns its combined output and exit code.
func machineadm(t *testing.T, args ...string) (string, int) {
	t.Helper()
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required: %v", tool, err)
		}
	}
	c := exec.Command("unshare", append([]string{"--net", "sh", "-c", `ip link set lo up && exec "$0" "$@"`, os.Args[0]}, args...)...)
	c.Env = append(os.Environ(), "MACHINEADM_TEST_EXEC=1")
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// TestBootstrapDryRunInit runs every init phase of the control-plane-init
// example in kubeadm's dry-run mode with the CA set from `pki init`, and
// inspects what kubeadm would write.
func TestBootstrapDryRunInit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	tmp := t.TempDir()
	pkiDir := filepath.Join(tmp, "pki")
	out, code := machineadm(t, "pki", "init", "--out", pkiDir)
	if code != 0 {
		t.Fatalf("pki init exit %d:\n%s", code, out)
	}
	// A second pki init into the same directory changes nothing: exit 2.
	if out, code := machineadm(t, "pki", "init", "--out", pkiDir); code != 2 || !strings.Contains(out, "already exist") {
		t.Errorf("pki init over an existing CA set: exit %d:\n%s", code, out)
	}

	// The example, with its pki.dir pointed at the new CA set and its
	// secret files made by token generate and pki certificate-key.
	specPath := withInputs(t, "control-plane-init", pkiDir)

	_, etcBefore := os.Stat("/etc/kubernetes")
	_, kubeletBefore := os.Stat("/var/lib/kubelet")
	drDir := filepath.Join(tmp, "dryrun")
	out, code = machineadm(t, "bootstrap", "-f", specPath, "--dry-run", "--dry-run-dir", drDir)
	if code != 0 {
		t.Fatalf("bootstrap --dry-run exit %d:\n%s", code, out)
	}
	for _, phase := range append([]string{"kubeadm-config"}, tablePhases(t, specPath)...) {
		if !strings.Contains(out, "[bootstrap] "+phase+": would change") && !strings.Contains(out, "[bootstrap] "+phase+": unchanged") {
			t.Errorf("phase %s did not succeed", phase)
		}
	}
	// The plan a person reads: host paths and API objects, not kubeadm's
	// YAML (that is behind -v and in the log file).
	for _, want := range []string{
		"[bootstrap] certs/ca: unchanged", // the CA set from pki init is used
		"  would write /etc/kubernetes/pki/apiserver.crt",
		"  would write /etc/kubernetes/manifests/kube-apiserver.yaml",
		"  would write /etc/kubernetes/admin.conf",
		"  would write /var/lib/kubelet/config.yaml",
		"  would create ConfigMap kube-system/kubeadm-config",
		"  would create Deployment kube-system/coredns",
		"  would patch Node cp1",
		"dry run: files kubeadm would write are in " + filepath.Join(drDir, "kubeadm") + ", the certificates in " + filepath.Join(drDir, "pki"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q", want)
		}
	}
	if n := strings.Count(out, "\n"); n > 300 || strings.Contains(out, "apiVersion: v1") || strings.Contains(out, "[dryrun] Attached object") {
		t.Errorf("the plan is %d lines, or holds kubeadm's YAML:\n%s", n, out)
	}
	if strings.Contains(out, "level=INFO") {
		t.Error("INFO log lines on the console")
	}
	log, err := os.ReadFile(filepath.Join(drDir, "var/lib/machineadm/machineadm.log"))
	if err != nil || !strings.Contains(string(log), "[dryrun] Would perform action CREATE") || !strings.Contains(string(log), `msg="phase finished" phase=addon/coredns`) {
		t.Errorf("the log file lacks kubeadm's output or the structured log (%v)", err)
	}
	if _, err := os.Stat("/etc/kubernetes"); etcBefore != nil && err == nil {
		t.Error("dry run created /etc/kubernetes")
	}
	if _, err := os.Stat("/var/lib/kubelet"); kubeletBefore != nil && err == nil {
		t.Error("dry run created /var/lib/kubelet")
	}

	kdir := filepath.Join(drDir, "kubeadm")
	// The CA is the one from pki init, and it signed the serving cert.
	wantCA, _ := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	gotCA, err := os.ReadFile(filepath.Join(kdir, "ca.crt"))
	if err != nil || !bytes.Equal(gotCA, wantCA) {
		t.Fatalf("dry-run ca.crt differs from pki init's (%v)", err)
	}
	ca := parseCert(t, wantCA)
	apiserver := parseCertFile(t, filepath.Join(kdir, "apiserver.crt"))
	if err := apiserver.CheckSignatureFrom(ca); err != nil {
		t.Errorf("apiserver.crt not signed by the pki init CA: %v", err)
	}
	for _, name := range []string{"cp.demo.example", "api.demo.example", "cp1", "kubernetes.default.svc.cluster.local"} {
		if !slices.Contains(apiserver.DNSNames, name) {
			t.Errorf("apiserver.crt DNS SANs %v lack %s", apiserver.DNSNames, name)
		}
	}
	for _, ip := range []string{"192.0.2.10", "192.0.2.100", "10.96.0.1"} {
		if !slices.ContainsFunc(apiserver.IPAddresses, func(a net.IP) bool { return a.Equal(net.ParseIP(ip)) }) {
			t.Errorf("apiserver.crt IP SANs %v lack %s", apiserver.IPAddresses, ip)
		}
	}
	// The manifests and kubeconfig files name certificate paths in the
	// dry run's certificates directory; every one of them exists there.
	certsDir := filepath.Join(drDir, "pki")
	for _, f := range []string{"kube-apiserver.yaml", "kube-controller-manager.yaml", "etcd.yaml"} {
		b, _ := os.ReadFile(filepath.Join(kdir, f))
		paths := regexp.MustCompile(regexp.QuoteMeta(certsDir)+`/[\w./-]+`).FindAllString(string(b), -1)
		if len(paths) < 3 {
			t.Errorf("%s names %d paths in %s", f, len(paths), certsDir)
		}
		for _, p := range paths {
			if _, err := os.Stat(p); err != nil && !strings.HasSuffix(p, "/") && filepath.Ext(p) != "" {
				t.Errorf("%s names %s, which the dry run did not write: %v", f, p, err)
			}
		}
	}
	front := parseCertFile(t, filepath.Join(kdir, "front-proxy-client.crt"))
	frontCA := parseCertFile(t, filepath.Join(pkiDir, "front-proxy-ca.crt"))
	if err := front.CheckSignatureFrom(frontCA); err != nil {
		t.Errorf("front-proxy-client.crt not signed by the pki init front-proxy CA: %v", err)
	}

	// Static pod manifests honour imageRepository and version.
	for file, image := range map[string]string{
		"kube-apiserver.yaml":          "registry.demo.example/k8s/kube-apiserver:v1.37.2",
		"kube-controller-manager.yaml": "registry.demo.example/k8s/kube-controller-manager:v1.37.2",
		"kube-scheduler.yaml":          "registry.demo.example/k8s/kube-scheduler:v1.37.2",
		"etcd.yaml":                    "registry.demo.example/k8s/etcd:",
	} {
		b, err := os.ReadFile(filepath.Join(kdir, file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if !strings.Contains(string(b), "image: "+image) {
			t.Errorf("%s does not use image %s", file, image)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(kdir, "kube-apiserver.yaml")); !strings.Contains(string(b), "--audit-log-maxage=30") {
		t.Error("kube-apiserver.yaml lacks the extra arg audit-log-maxage=30")
	}
	// The kubelet patch reached kubeadm.
	if b, _ := os.ReadFile(filepath.Join(kdir, "config.yaml")); !strings.Contains(string(b), "failCgroupV1: false") {
		t.Error("kubelet config.yaml lacks failCgroupV1: false from spec.node.kubelet.config")
	}
	// The dry run's report is in the dry-run directory, every phase listed.
	rep := requireReport(t, filepath.Join(drDir, "var/lib/machineadm/report.json"), report.ResultSucceeded, "")
	if len(rep.Phases) < 20 {
		t.Errorf("report lists %d phases", len(rep.Phases))
	}
	// The run's secrets never reach the console.
	tok, _ := os.ReadFile(filepath.Join(filepath.Dir(specPath), "secrets", "bootstrap-token"))
	if len(tok) < 23 || strings.Contains(out, strings.TrimSpace(string(tok))[7:]) {
		t.Error("output contains the bootstrap token's secret")
	}

	// The same dry run again into the same directory plans the same host
	// changes: what the first one staged there is not taken as present
	// (it made certs/apiserver and the rest "unchanged").
	again, code := machineadm(t, "bootstrap", "-f", specPath, "--dry-run", "--dry-run-dir", drDir)
	if code != 0 {
		t.Fatalf("second bootstrap --dry-run into %s: exit %d:\n%s", drDir, code, again)
	}
	if first, second := planLines(out), planLines(again); !slices.Equal(first, second) || len(first) < 20 {
		t.Errorf("the second dry run plans other changes:\nfirst %q\nsecond %q", first, second)
	}
}

// planLines are a dry run's "would write" lines, in order.
func planLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  would write ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestBootstrapDryRunJoins plans the worker and control-plane-join
// examples: kubeadm's dry-run join uses its own fake cluster-info, so no
// endpoint of the examples is contacted (and the run is in a private
// network namespace anyway).
func TestBootstrapDryRunJoins(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	for _, ex := range []string{"worker", "control-plane-join"} {
		dr := filepath.Join(t.TempDir(), "dr")
		out, code := machineadm(t, "bootstrap", "-f", withInputs(t, ex, ""), "--dry-run", "--dry-run-dir", dr)
		if code != 0 {
			t.Errorf("%s: exit %d:\n%s", ex, code, out)
			continue
		}
		// A dry join joins nothing and says so.
		logFile, _ := os.ReadFile(filepath.Join(dr, "var/lib/machineadm/machineadm.log"))
		repFile, _ := os.ReadFile(filepath.Join(dr, "var/lib/machineadm/report.json"))
		if strings.Contains(out+string(logFile)+string(repFile), "has joined the cluster") {
			t.Errorf("%s: a dry run says the node joined:\n%s", ex, out)
		}
		for _, want := range []string{"would discover the cluster at cp.demo.example:6443", "the endpoint was not contacted", "dry run: no cluster was contacted; a real run would join the cluster at cp.demo.example:6443"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", ex, want, out)
			}
		}
		rep := requireReport(t, filepath.Join(dr, "var/lib/machineadm/report.json"), report.ResultSucceeded, "")
		for _, name := range tablePhases(t, "../../docs/examples/"+ex+".yaml") {
			found := false
			for _, p := range rep.Phases {
				found = found || (p.Name == name && (p.Status == report.PhaseSucceeded || p.Status == report.PhaseUnchanged))
			}
			if !found {
				t.Errorf("%s: phase %s not Succeeded in the report", ex, name)
			}
		}
		// kubelet-start wrote the kubelet's files into the dry-run directory,
		// with the node labels and the kubelet patch of the spec.
		flags, err := os.ReadFile(filepath.Join(dr, "kubeadm", "kubeadm-flags.env"))
		if err != nil {
			t.Errorf("%s: %v", ex, err)
		} else if ex == "worker" && !strings.Contains(string(flags), "--node-labels=example.com/pool=general") {
			t.Errorf("worker kubeadm-flags.env lacks the node label: %s", flags)
		}
		if kc, err := os.ReadFile(filepath.Join(dr, "kubeadm", "config.yaml")); err != nil || !strings.Contains(string(kc), "failCgroupV1: false") {
			t.Errorf("%s: kubelet config.yaml lacks the spec's failCgroupV1 patch (%v)", ex, err)
		}
	}
}

// TestBootstrapDryRunJoinStandIn: a join's dry run discovers a stand-in
// cluster-info made for the spec's token and CA, whatever the token's ID:
// with "abcdef" (kubeadm's own dry-run token ID and its docs' example) a
// worker and a control-plane join with the CA set in pki.dir plan to the
// end; a control-plane join whose caCertHashes do not pin that CA fails
// in preflight as DiscoveryFailed, as the real join would.
func TestBootstrapDryRunJoinStandIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	const token = "abcdef.0123456789abcdef"
	const exampleHash = "sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10"
	tmp := t.TempDir()
	pkiDir := filepath.Join(tmp, "pki")
	out, code := machineadm(t, "pki", "init", "--out", pkiDir)
	if code != 0 {
		t.Fatalf("pki init exit %d:\n%s", code, out)
	}
	out, code = machineadm(t, "pki", "hash", pkiDir)
	caHash := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(caHash, "sha256:") || strings.Contains(caHash, "\n") {
		t.Fatalf("pki hash exit %d:\n%s", code, out)
	}
	// withToken is the example with spec.join.token's file holding token
	// and, for a control plane, pki.dir naming the CA set.
	withToken := func(ex, hash string) string {
		path := withInputs(t, ex, "")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := strings.Replace(string(raw), exampleHash, hash, 1)
		if ex == "control-plane-join" {
			doc = strings.Replace(doc, "  controlPlane:\n", "  controlPlane:\n    pki:\n      dir: "+pkiDir+"\n", 1)
		}
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), "secrets", "bootstrap-token"), []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct{ ex, hash, want string }{
		{"worker", exampleHash, "spec.join.caCertHashes checked for their form only"},
		{"control-plane-join", caHash, "the CA pinned by spec.join.caCertHashes"},
	} {
		dr := filepath.Join(t.TempDir(), "dr")
		out, code := machineadm(t, "bootstrap", "-f", withToken(tc.ex, tc.hash), "--dry-run", "--dry-run-dir", dr)
		if code != 0 {
			t.Errorf("%s, token ID abcdef: exit %d:\n%s", tc.ex, code, out)
			continue
		}
		requireReport(t, filepath.Join(dr, "var/lib/machineadm/report.json"), report.ResultSucceeded, "")
		if !strings.Contains(out, tc.want) || strings.Contains(out, "0123456789abcdef") {
			t.Errorf("%s: the plan lacks %q, or shows the token:\n%s", tc.ex, tc.want, out)
		}
		// A worker's TLS bootstrap kubeconfig names the spec's endpoint
		// (the stand-in's is put back when the run ends).
		if kc, err := os.ReadFile(filepath.Join(dr, "kubeadm", "bootstrap-kubelet.conf")); tc.ex == "worker" && (err != nil || !strings.Contains(string(kc), "server: https://cp.demo.example:6443")) {
			t.Errorf("%s: bootstrap-kubelet.conf (%v):\n%s", tc.ex, err, kc)
		}
	}
	// The dry run contacts no cluster: with the spec's endpoint on a
	// loopback listener, kubeadm's dry-run client (which reads from the
	// server its discovered kubeconfig names before falling back to its
	// own answers) connects only to the stand-in; the files it wrote name
	// the spec's endpoint.
	for _, ex := range []string{"worker", "control-plane-join"} {
		hash := exampleHash
		if ex == "control-plane-join" {
			hash = caHash
		}
		path := withToken(ex, hash)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(raw), "cp.demo.example:6443", "127.0.0.1:16443")), 0o600); err != nil {
			t.Fatal(err)
		}
		dr := filepath.Join(t.TempDir(), "dr")
		t.Setenv("MACHINEADM_TEST_TRAP", "127.0.0.1:16443")
		out, code := machineadm(t, "bootstrap", "-f", path, "--dry-run", "--dry-run-dir", dr)
		t.Setenv("MACHINEADM_TEST_TRAP", "")
		if code != 0 || strings.Contains(out, "TEST-TRAP:") {
			t.Errorf("%s dry run with the endpoint on a listener: exit %d, or it contacted the endpoint:\n%s", ex, code, out)
		}
		conf := "bootstrap-kubelet.conf"
		if ex == "control-plane-join" {
			conf = "admin.conf"
		}
		if kc, err := os.ReadFile(filepath.Join(dr, "kubeadm", conf)); err != nil || !strings.Contains(string(kc), "server: https://127.0.0.1:16443\n") {
			t.Errorf("%s: %s names another server (%v):\n%s", ex, conf, err, kc)
		}
	}
	dr := filepath.Join(t.TempDir(), "dr")
	out, code = machineadm(t, "bootstrap", "-f", withToken("control-plane-join", exampleHash), "--dry-run", "--dry-run-dir", dr)
	if code != 1 || !strings.Contains(out, "DiscoveryFailed") {
		t.Errorf("control-plane join pinned to another CA: exit %d:\n%s", code, out)
	}
	rep := requireReport(t, filepath.Join(dr, "var/lib/machineadm/report.json"), report.ResultFailed, errclass.DiscoveryFailed)
	if rep.FailedPhase != "preflight" {
		t.Errorf("failed phase %q, want preflight", rep.FailedPhase)
	}
}

func TestExitCodes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	tmp := t.TempDir()
	bad := filepath.Join(tmp, "bad.yaml")
	raw, _ := os.ReadFile("../../docs/examples/worker.yaml")
	os.WriteFile(bad, append(raw, []byte("  colour: blue\n")...), 0o600)
	reportRoot := t.TempDir()
	out, code := machineadm(t, "bootstrap", "-f", bad, "--report-root", reportRoot, "--work-dir", filepath.Join(tmp, "work"))
	if code != 2 || !strings.Contains(out, "spec.colour") {
		t.Errorf("unknown field: exit %d, output:\n%s", code, out)
	}
	requireReport(t, filepath.Join(reportRoot, "var/lib/machineadm/report.json"), report.ResultFailed, errclass.InvalidSpec)
	reportRoot = t.TempDir()
	out, code = machineadm(t, "bootstrap", "-f", "../../docs/examples/worker.yaml", "--skip-phases", "no-such-phase", "--report-root", reportRoot, "--work-dir", filepath.Join(tmp, "work"))
	if !strings.Contains(out, "no-such-phase") {
		t.Errorf("unknown phase not named:\n%s", out)
	}
	requireReport(t, filepath.Join(reportRoot, "var/lib/machineadm/report.json"), report.ResultFailed, errclass.InvalidSpec)
	if code != 2 {
		t.Errorf("unknown phase: exit %d:\n%s", code, out)
	}
	out, code = machineadm(t, "bootstrap")
	if code != 2 {
		t.Errorf("missing -f: exit %d:\n%s", code, out)
	}
	// A join whose token file is missing fails in kubeadm-config (run
	// alone, without inputs-check) before touching anything, with the
	// class PayloadUnavailable and exit code 1; a dry run fails the same
	// way (TestDryRunFailsOnMissingInputs in pkg/cmd).
	reportRoot = t.TempDir()
	out, code = machineadm(t, "bootstrap", "phase", "kubeadm-config", "-f", "../../docs/examples/worker.yaml", "--report-root", reportRoot, "--work-dir", filepath.Join(tmp, "work"))
	if code != 1 || !strings.Contains(out, "PayloadUnavailable") {
		t.Errorf("missing token file: exit %d, output:\n%s", code, out)
	}
	rep := requireReport(t, filepath.Join(reportRoot, "var/lib/machineadm/report.json"), report.ResultFailed, errclass.PayloadUnavailable)
	if rep.FailedPhase != "kubeadm-config" {
		t.Errorf("failed phase %q, want kubeadm-config", rep.FailedPhase)
	}
}

func requireReport(t *testing.T, path string, result report.Result, class errclass.Class) *report.BootstrapReport {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("outcome report: %v", err)
	}
	rep, err := report.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result != result || rep.ErrorClass != class {
		t.Errorf("report %s: result %s class %q, want %s %q", path, rep.Result, rep.ErrorClass, result, class)
	}
	return rep
}

// TestBootstrapBadInputsChangeNothing: bad input found before any phase
// (kubeadm would refuse the version, --dry-run-dir without --dry-run, a
// missing spec file) exits 2 with only the report written; a malformed
// secret file or a junk CA set stops the run in inputs-check, before any
// host phase.
func TestBootstrapBadInputsChangeNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	tmp := t.TempDir()
	raw, _ := os.ReadFile("../../docs/examples/worker.yaml")
	// kubeadm 1.37 deploys control planes of v1.36 and v1.37 only.
	cpInit, _ := os.ReadFile("../../docs/examples/control-plane-init.yaml")
	old := strings.Replace(string(cpInit), "version: v1.37.2", "version: v1.35.0", 1)
	oldPath := filepath.Join(tmp, "old.yaml")
	os.WriteFile(oldPath, []byte(old), 0o600)

	out, code := machineadm(t, "config", "validate", "-f", oldPath)
	if code != 2 || !strings.Contains(out, "v1.35.0") || !strings.Contains(out, "spec.kubernetes.version: Invalid value") {
		t.Errorf("validate v1.35.0: exit %d:\n%s", code, out)
	}
	rr := t.TempDir()
	out, code = machineadm(t, "bootstrap", "-f", oldPath, "--report-root", rr, "--work-dir", filepath.Join(tmp, "w1"))
	if code != 2 {
		t.Errorf("bootstrap v1.35.0: exit %d:\n%s", code, out)
	}
	requireReport(t, filepath.Join(rr, "var/lib/machineadm/report.json"), report.ResultFailed, errclass.InvalidSpec)
	if _, err := os.Stat(filepath.Join(tmp, "w1")); err == nil {
		t.Error("work dir created for an invalid spec")
	}

	if out, code = machineadm(t, "bootstrap", "-f", "../../docs/examples/worker.yaml", "--dry-run-dir", filepath.Join(tmp, "x")); code != 2 {
		t.Errorf("--dry-run-dir without --dry-run: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(tmp, "x")); err == nil {
		t.Error("--dry-run-dir without --dry-run created the directory")
	}
	// Even an empty --dry-run-dir= never means a real run.
	if out, code = machineadm(t, "bootstrap", "-f", "../../docs/examples/worker.yaml", "--dry-run-dir=", "--report-root", t.TempDir(), "--work-dir", filepath.Join(tmp, "w0")); code != 2 {
		t.Errorf("--dry-run-dir= without --dry-run: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(tmp, "w0")); err == nil {
		t.Error("--dry-run-dir= without --dry-run started a run")
	}
	// A file where the dry-run directory should go is a usage error.
	notDir := filepath.Join(tmp, "file")
	os.WriteFile(notDir, nil, 0o600)
	if out, code = machineadm(t, "bootstrap", "-f", "../../docs/examples/worker.yaml", "--dry-run", "--dry-run-dir", notDir); code != 2 {
		t.Errorf("--dry-run-dir on a file: exit %d:\n%s", code, out)
	}

	rr = t.TempDir()
	if out, code = machineadm(t, "bootstrap", "-f", filepath.Join(tmp, "missing.yaml"), "--report-root", rr, "--work-dir", filepath.Join(tmp, "w3")); code != 2 {
		t.Errorf("missing spec: exit %d:\n%s", code, out)
	}
	requireReport(t, filepath.Join(rr, "var/lib/machineadm/report.json"), report.ResultFailed, errclass.InvalidSpec)

	// A token file holding something else: inputs-check fails, no host phase starts.
	tokenFile := filepath.Join(tmp, "token")
	os.WriteFile(tokenFile, []byte("not a token\n"), 0o600)
	bad := strings.Replace(string(raw), "/etc/machineadm/secrets/bootstrap-token", tokenFile, 1)
	badPath := filepath.Join(tmp, "bad-token.yaml")
	os.WriteFile(badPath, []byte(bad), 0o600)
	rr = t.TempDir()
	out, code = machineadm(t, "bootstrap", "-f", badPath, "--report-root", rr, "--work-dir", filepath.Join(tmp, "w2"))
	if code != 1 || strings.Contains(out, "not a token") {
		t.Errorf("malformed token file: exit %d (the file's content must not be echoed):\n%s", code, out)
	}
	rep := requireReport(t, filepath.Join(rr, "var/lib/machineadm/report.json"), report.ResultFailed, errclass.PayloadUnavailable)
	if rep.FailedPhase != "inputs-check" {
		t.Errorf("failed phase %q, want inputs-check", rep.FailedPhase)
	}
	for _, p := range rep.Phases {
		if p.Name == "files" && p.Status != report.PhaseSkipped {
			t.Errorf("host phase files ran (%s) after a failed inputs-check", p.Status)
		}
	}

	// A junk CA set in pki.dir is refused, even in a dry run.
	pki := filepath.Join(tmp, "pki")
	os.MkdirAll(pki, 0o700)
	os.WriteFile(filepath.Join(pki, "ca.crt"), []byte("junk"), 0o644)
	os.WriteFile(filepath.Join(pki, "ca.key"), []byte("junk"), 0o600)
	cpPath := withInputs(t, "control-plane-init", pki)
	dr := filepath.Join(tmp, "dr")
	out, code = machineadm(t, "bootstrap", "-f", cpPath, "--dry-run", "--dry-run-dir", dr)
	if code != 1 {
		t.Errorf("junk CA: exit %d:\n%s", code, out)
	}
	rep = requireReport(t, filepath.Join(dr, "var/lib/machineadm/report.json"), report.ResultFailed, errclass.PayloadUnavailable)
	if rep.FailedPhase != "inputs-check" || !strings.Contains(rep.Error, "spec.controlPlane.pki.dir") {
		t.Errorf("junk CA failed in %q (%s), want inputs-check naming spec.controlPlane.pki.dir", rep.FailedPhase, rep.Error)
	}
}

func parseCertFile(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseCert(t, b)
}

func parseCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tablePhases returns the full names of the kubeadm phases (parents and
// sub-phases) that apply to the spec at path, from kubeadm's phase table.
func tablePhases(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Load(data, path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range run.PhasesFor(l.Config) {
		names = append(names, p.Name)
	}
	if len(names) < 3 {
		t.Fatalf("%s: only %v apply", path, names)
	}
	return names
}

// TestKubeletRangesRefusedBeforeAnyChange: a kubelet value the kubelet
// would refuse when it starts (validation.validateKubeletRanges) is bad
// input: config validate, bootstrap and prepare --root exit 2 naming
// spec.node.kubelet.config.<field>, before the work dir or the root is
// touched; only the report is written.
func TestKubeletRangesRefusedBeforeAnyChange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	tmp := t.TempDir()
	raw, _ := os.ReadFile("../../docs/examples/worker.yaml")
	bad := strings.Replace(string(raw), "        failCgroupV1: false\n",
		"        failCgroupV1: false\n        maxPods: -1\n        cpuCFSQuotaPeriod: 2s\n        imageGCLowThresholdPercent: 90\n", 1)
	if bad == string(raw) {
		t.Fatal("docs/examples/worker.yaml has no kubelet config to extend")
	}
	badPath := filepath.Join(tmp, "bad-kubelet.yaml")
	os.WriteFile(badPath, []byte(bad), 0o600)
	fields := []string{
		"spec.node.kubelet.config.maxPods: Invalid value: -1: must be 0 or more",
		`spec.node.kubelet.config.cpuCFSQuotaPeriod: Invalid value: "2s": must be between 1ms and 1s`,
		"spec.node.kubelet.config.imageGCLowThresholdPercent: Invalid value: 90: must be less than imageGCHighThresholdPercent (85, the kubelet's default; a join starts from the cluster's kubelet-config ConfigMap",
	}
	requireFields := func(what, out string, code int) {
		t.Helper()
		if code != 2 {
			t.Errorf("%s: exit %d, want 2:\n%s", what, code, out)
		}
		for _, f := range fields {
			if !strings.Contains(out, f) {
				t.Errorf("%s: output lacks %q:\n%s", what, f, out)
			}
		}
	}
	out, code := machineadm(t, "config", "validate", "-f", badPath)
	requireFields("config validate", out, code)

	rr, work := t.TempDir(), filepath.Join(tmp, "work")
	out, code = machineadm(t, "bootstrap", "-f", badPath, "--report-root", rr, "--work-dir", work)
	requireFields("bootstrap", out, code)
	rep := requireReport(t, filepath.Join(rr, "var/lib/machineadm/report.json"), report.ResultFailed, errclass.InvalidSpec)
	if !strings.Contains(rep.Error, "spec.node.kubelet.config.maxPods") {
		t.Errorf("report error %q does not name spec.node.kubelet.config.maxPods", rep.Error)
	}
	if _, err := os.Stat(work); err == nil {
		t.Error("bootstrap created its work dir for a kubelet config the kubelet refuses")
	}

	root := t.TempDir()
	out, code = machineadm(t, "prepare", "-f", badPath, "--root", root)
	requireFields("prepare --root", out, code)
	var written []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			written = append(written, rel)
		}
		return nil
	})
	if len(written) > 0 && !slices.Equal(written, []string{"var/lib/machineadm/report.json"}) {
		t.Errorf("prepare --root wrote %q for an invalid spec, want at most its report", written)
	}
}
