package evidence

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/compliance"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

const apiserverPod = `apiVersion: v1
kind: Pod
metadata: {name: kube-apiserver, namespace: kube-system}
spec:
  containers:
  - name: kube-apiserver
    image: registry.k8s.io/kube-apiserver:v1.37.2
    command:
    - kube-apiserver
    - --authorization-mode=Node,RBAC
    - --profiling=false
    - --authentication-config=/etc/kubernetes/machineadm/authentication.yaml
    - --tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_128_CBC_SHA
`

const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
authorization: {mode: Webhook}
rotateCertificates: true
serverTLSBootstrap: true
podPidsLimit: 4096
`

func write(t *testing.T, root, p, content string, mode os.FileMode) {
	t.Helper()
	hp := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hp, mode); err != nil {
		t.Fatal(err)
	}
}

func find(t *testing.T, rs []Result, id string) Result {
	t.Helper()
	for _, r := range rs {
		if r.Check.ID == id {
			return r
		}
	}
	t.Fatalf("no result for %s", id)
	return Result{}
}

// A node as kubeadm leaves it fails CIS 4.1.9 (config.yaml 0644); Harden
// makes it pass; flags, the anonymous limit and waivers are read from the
// live files.
func TestEvaluateAndHarden(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/etc/kubernetes/manifests/kube-apiserver.yaml", apiserverPod, 0o600)
	write(t, root, "/etc/kubernetes/machineadm/authentication.yaml",
		"apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /api/v1/namespaces/kube-public/configmaps/cluster-info\n", 0o600)
	write(t, root, KubeletConfigFile, kubeletConfig, 0o644)
	write(t, root, KubeletFlagsFile, `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --hostname-override=other"`+"\n", 0o644)
	write(t, root, "/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0o644)
	write(t, root, "/etc/group", "root:x:0:\n", 0o644)
	n := Node{Root: root, ControlPlane: true, CertificatesDir: "/etc/kubernetes/pki"}

	rs := Evaluate(n, compliance.CIS112, map[string]string{"4.2.7": "cloud names differ"})
	for id, want := range map[string]Verdict{
		"4.1.9":  Fail,          // kubeadm's 0644
		"1.2.15": Pass,          // --profiling=false
		"1.2.7":  Pass,          // Node in authorization mode
		"1.2.16": Fail,          // no audit log path in this manifest
		"1.2.1":  Warn,          // anonymous limited, not off
		"1.2.29": Warn,          // a CBC suite: manual check, so WARN
		"4.2.1":  Pass,          // kubelet config
		"4.2.11": Pass,          // serverTLSBootstrap
		"4.2.7":  Warn,          // manual, the flag file overrides
		"1.1.7":  NotApplicable, // no etcd manifest
	} {
		if got := find(t, rs, id); got.Verdict != want {
			t.Errorf("%s: %s (%s), want %s", id, got.Verdict, got.Detail, want)
		}
	}
	if r := find(t, rs, "4.2.7"); r.Waiver == "" || r.Failed() {
		t.Errorf("4.2.7 waiver not recorded: %+v", r)
	}
	for _, r := range rs {
		if r.Check.Scope == compliance.ScopePolicies {
			t.Errorf("a cluster policy check was evaluated on the node: %s", r.Check.ID)
		}
	}

	changes, err := Harden(context.Background(), n, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) == 0 || !strings.Contains(strings.Join(changes, "\n"), KubeletConfigFile) {
		t.Errorf("Harden changes %q, want the kubelet config", changes)
	}
	if got := find(t, Evaluate(n, compliance.CIS112, nil), "4.1.9"); got.Verdict != Pass {
		t.Errorf("after Harden 4.1.9 is %s (%s)", got.Verdict, got.Detail)
	}
	again, err := Harden(context.Background(), n, nil, false)
	if err != nil || len(again) != 0 {
		t.Errorf("second Harden: %q, %v; want no change", again, err)
	}

	// A worker is asked only the node checks.
	for _, r := range Evaluate(Node{Root: root}, compliance.CIS112, nil) {
		if r.Check.Scope != compliance.ScopeNode {
			t.Errorf("worker evaluated %s (%s)", r.Check.ID, r.Check.Scope)
		}
	}
}

func TestExecStart(t *testing.T) {
	got, err := execStart([]byte("[Service]\nExecStart=/usr/local/bin/etcd \"--name=a b\" --data-dir=/var/lib/etcd --x=100%%\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := parseFlags(got)
	if f["name"] != "a b" || f["data-dir"] != "/var/lib/etcd" || f["x"] != "100%" {
		t.Errorf("flags %v from %q", f, got)
	}
}

// The Systemd runtime's flags are read back from the unit cpunits renders
// (its quoting of blanks, "%" and "$"), the way the evidence reads a live
// unit.
func TestFlagsFromRenderedUnit(t *testing.T) {
	c := cpunits.Component{
		Name: "kube-apiserver", Description: "test", User: "kubeadm-kas", Group: "kubeadm-kas",
		Command: []string{"/usr/local/bin/kube-apiserver", "--profiling=false", "--audit-log-path=/var/log/a b/audit.log",
			"--token-auth-file=/x/100%$HOME", "--tls-min-version=VersionTLS12"},
	}
	fs, err := cpunits.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, f := range fs {
		write(t, root, f.Path, string(f.Content), 0o600)
	}
	n := Node{Root: root, ControlPlane: true, Systemd: true}
	got, ok, err := n.flags(compliance.KubeAPIServer)
	if err != nil || !ok {
		t.Fatalf("flags: %v %v", ok, err)
	}
	want := map[string]string{"profiling": "false", "audit-log-path": "/var/log/a b/audit.log", "token-auth-file": "/x/100%$HOME", "tls-min-version": "VersionTLS12"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("--%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// A control plane of runtime Systemd: the units stand for the pod spec
// files (1.1.1-1.1.8 evaluate them, never NOT_APPLICABLE), and the files
// a unit gets as credentials ("--authentication-config=%d/…" with its
// LoadCredential= line) are read where the credential comes from: the
// anonymous probe reads the AuthenticationConfiguration, not a path
// "%d/…" that does not exist.
func TestSystemdUnitsAndCredentials(t *testing.T) {
	root := t.TempDir()
	const authn = "/etc/kubernetes/machineadm/authentication.yaml"
	write(t, root, authn, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n", 0o600)
	write(t, root, "/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0o644)
	write(t, root, "/etc/group", "root:x:0:\n", 0o644)
	write(t, root, "/etc/kubernetes/scheduler.conf", "kubeconfig", 0o600)
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"} {
		c := cpunits.Component{Name: name, Description: "test", User: "kubeadm-x", Group: "kubeadm-x",
			Command: []string{"/usr/local/bin/" + name, "--profiling=false"}}
		if name == "kube-apiserver" {
			// A literal "%d/…" value (an extraArgs entry; the unit
			// writes "%%d/…") is not the credential of that ID.
			c.Command = append(c.Command, "--authentication-config="+authn, "--oidc-ca-file=%d/authentication-config")
			c.Credentials = []cpunits.Credential{{ID: "authentication-config", Path: authn}}
		}
		fs, err := cpunits.Render(c)
		if err != nil {
			t.Fatal(err)
		}
		write(t, root, fs[0].Path, string(fs[0].Content), fs[0].Mode)
	}
	n := Node{Root: root, ControlPlane: true, Systemd: true, CertificatesDir: "/etc/kubernetes/pki"}
	flags, ok, err := n.flags(compliance.KubeAPIServer)
	if err != nil || !ok || flags["authentication-config"] != authn {
		t.Fatalf("--authentication-config = %q (%v, %v), want %s", flags["authentication-config"], ok, err, authn)
	}
	if got := flags["oidc-ca-file"]; got != "%d/authentication-config" {
		t.Errorf("--oidc-ca-file = %q, want the literal value %q the process gets", got, "%d/authentication-config")
	}
	rs := Evaluate(n, compliance.CIS112, nil)
	if r := find(t, rs, "1.2.1"); r.Verdict != Warn {
		t.Errorf("1.2.1: %s (%s), want WARN: anonymous limited by the credential's file", r.Verdict, r.Detail)
	}
	for _, id := range []string{"1.1.1", "1.1.2", "1.1.3", "1.1.4", "1.1.5", "1.1.6", "1.1.7", "1.1.8", "1.1.15", "1.1.16"} {
		if r := find(t, rs, id); r.Verdict != Pass {
			t.Errorf("%s: %s (%s), want PASS", id, r.Verdict, r.Detail)
		}
	}
	if r := find(t, rs, "1.1.1"); !strings.Contains(r.Detail, "/etc/systemd/system/kube-apiserver.service") {
		t.Errorf("1.1.1 does not name the unit: %s", r.Detail)
	}
	if err := os.Chmod(filepath.Join(root, "etc/systemd/system/etcd.service"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := find(t, Evaluate(n, compliance.CIS112, nil), "1.1.7"); r.Verdict != Fail {
		t.Errorf("1.1.7 with etcd.service 0644: %s (%s), want FAIL", r.Verdict, r.Detail)
	}
}

// TestHardenDryRunSaysWould: a dry run of Harden on a static-pod control
// plane with a local etcd changes nothing and phrases every change as
// planned ("would write /etc/sysusers.d/…", "would set /var/lib/etcd …"),
// never as done: the dry run's plan said "wrote" for the sysusers file it
// had not written.
func TestHardenDryRunSaysWould(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0o644)
	write(t, root, "/etc/group", "root:x:0:\n", 0o644)
	write(t, root, KubeletConfigFile, kubeletConfig, 0o644)
	n := Node{Root: root, ControlPlane: true, EtcdDataDir: "/var/lib/etcd", CertificatesDir: "/etc/kubernetes/pki"}
	changes, err := Harden(context.Background(), n, func(context.Context, string, ...string) ([]byte, error) {
		t.Fatal("a dry run ran a command")
		return nil, nil
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) < 2 {
		t.Fatalf("dry run changes %q, want the sysusers file and the kubelet config at least", changes)
	}
	for _, c := range changes {
		if !strings.HasPrefix(c, "would ") {
			t.Errorf("dry-run change %q is not phrased as planned", c)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "etc/sysusers.d")); !os.IsNotExist(err) {
		t.Errorf("the dry run wrote sysusers.d: %v", err)
	}
}

// CIS 1.2.28 holds when the first provider for Secrets is aescbc, kms or
// secretbox, as kube-bench's test reads it; aesgcm (no safe static key),
// identity, or no entry for Secrets does not hold (WARN: a manual check).
func TestEncryptionProviderCheck(t *testing.T) {
	for first, want := range map[string]Verdict{
		"aescbc: {keys: [{name: k, secret: c2VjcmV0}]}":                    Pass,
		"secretbox: {keys: [{name: k, secret: c2VjcmV0}]}":                 Pass,
		"kms: {apiVersion: v2, name: v, endpoint: unix:///run/kms/k.sock}": Pass,
		"aesgcm: {keys: [{name: k, secret: c2VjcmV0}]}":                    Warn,
		"identity: {}": Warn,
	} {
		root := t.TempDir()
		write(t, root, "/etc/kubernetes/manifests/kube-apiserver.yaml", apiserverPod+"    - --encryption-provider-config=/etc/kubernetes/apiserver/encryption-config.yaml\n", 0o600)
		write(t, root, "/etc/kubernetes/apiserver/encryption-config.yaml",
			"apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - "+first+"\n  - identity: {}\n", 0o600)
		n := Node{Root: root, ControlPlane: true, CertificatesDir: "/etc/kubernetes/pki"}
		rs := Evaluate(n, compliance.CIS112, nil)
		if got := find(t, rs, "1.2.27"); got.Verdict != Pass {
			t.Errorf("%s: 1.2.27 %s (%s)", first, got.Verdict, got.Detail)
		}
		if got := find(t, rs, "1.2.28"); got.Verdict != want {
			t.Errorf("%s: 1.2.28 %s (%s), want %s", first, got.Verdict, got.Detail, want)
		}
	}
}
