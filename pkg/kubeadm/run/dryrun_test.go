package run

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// dryRunOutput is kubeadm v1.37's dry-run output for upload-config/kubeadm
// and mark-control-plane, shortened, with a Secret whose data must never
// reach the plan.
const dryRunOutput = `[init] Using Kubernetes version: v1.37.2
[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace
[dryrun] Would perform action CREATE on resource "configmaps" in API group "core/v1"
[dryrun] Attached object:
apiVersion: v1
data:
  ClusterConfiguration: |
    apiVersion: kubeadm.k8s.io/v1beta4
    metadata:
      name: not-this-one

    kind: ClusterConfiguration
kind: ConfigMap
metadata:
  creationTimestamp: null
  name: kubeadm-config
  namespace: kube-system
[dryrun] Would perform action GET on resource "nodes" in API group "core/v1"
[dryrun] Resource name "cp1", namespace ""
[dryrun] Would perform action PATCH on resource "nodes" in API group "core/v1"
[dryrun] Resource name "cp1", namespace ""
[dryrun] Attached patch:
	{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}
[dryrun] Would perform action CREATE on resource "secrets" in API group "core/v1"
[dryrun] Attached object:
apiVersion: v1
data:
  token-secret: MDEyMzQ1Njc4OWFiY2RlZg==
kind: Secret
metadata:
  name: bootstrap-token-abcdef
  namespace: kube-system
type: bootstrap.kubernetes.io/token
[etcd] Would ensure that "/var/lib/etcd" directory is present
[dryrun] Would write file "/etc/kubernetes/manifests/etcd.yaml" with content:
apiVersion: v1
kind: Pod
`

func TestAPIPlan(t *testing.T) {
	got := apiPlan(strings.Split(dryRunOutput, "\n"))
	want := []string{
		"would create ConfigMap kube-system/kubeadm-config",
		"would patch nodes cp1",
		"would create Secret kube-system/bootstrap-token-abcdef",
		`would ensure that "/var/lib/etcd" directory is present`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got {
		if strings.Contains(l, "MDEyMzQ1Njc4OWFiY2RlZg") || strings.Contains(l, "not-this-one") {
			t.Errorf("an object's content reached the plan: %q", l)
		}
	}
}

func TestHostPath(t *testing.T) {
	for name, want := range map[string]string{
		"apiserver.crt":          "/etc/kubernetes/pki/apiserver.crt",
		"sa.pub":                 "/etc/kubernetes/pki/sa.pub",
		"etcd/server.key":        "/etc/kubernetes/pki/etcd/server.key",
		"admin.conf":             "/etc/kubernetes/admin.conf",
		"kube-apiserver.yaml":    "/etc/kubernetes/manifests/kube-apiserver.yaml",
		"etcd.yaml":              "/etc/kubernetes/manifests/etcd.yaml",
		"config.yaml":            "/var/lib/kubelet/config.yaml",
		"kubeadm-flags.env":      "/var/lib/kubelet/kubeadm-flags.env",
		"instance-config.yaml":   "/var/lib/kubelet/instance-config.yaml",
		"something/else.txt":     "",
		"unknown-file.bin":       "",
		"bootstrap-kubelet.conf": "/etc/kubernetes/bootstrap-kubelet.conf",
	} {
		if got := hostPath(name, "/etc/kubernetes/pki"); got != want {
			t.Errorf("hostPath(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestSyncCertificates: new certificates kubeadm wrote to its dry-run
// directory are copied to the certificates directory (keys 0600); one
// already there (the CA set, or kubeadm's copy of it) is left as it is,
// and not reported.
func TestSyncCertificates(t *testing.T) {
	dry, certs := t.TempDir(), t.TempDir()
	write := func(dir, name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(certs, "ca.crt", "the CA")
	before := snapshot(dry)
	write(dry, "ca.crt", "the CA")
	write(dry, "apiserver.crt", "cert")
	write(dry, "apiserver.key", "key")
	write(dry, "etcd/server.key", "etcd key")
	write(dry, "admin.conf", "kubeconfig")
	changed := snapshot(dry).changed(before)
	copied, err := syncCertificates(dry, certs, changed)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"apiserver.crt", "apiserver.key", "etcd/server.key"}; !reflect.DeepEqual(copied, want) {
		t.Errorf("copied %q, want %q", copied, want)
	}
	if fi, err := os.Stat(filepath.Join(certs, "apiserver.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("apiserver.key: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(certs, "admin.conf")); err == nil {
		t.Error("a kubeconfig was copied to the certificates directory")
	}
	plan := filePlan(changed, copied, "/etc/kubernetes/pki", true)
	want := []string{"would write /etc/kubernetes/admin.conf", "would write /etc/kubernetes/pki/apiserver.crt",
		"would write /etc/kubernetes/pki/apiserver.key", "would write /etc/kubernetes/pki/etcd/server.key"}
	if !reflect.DeepEqual(plan, want) {
		t.Errorf("plan %q, want %q", plan, want)
	}
	// Without a certificates directory (a worker) every file is listed.
	if plan := filePlan([]string{"ca.crt"}, nil, "/etc/kubernetes/pki", false); !reflect.DeepEqual(plan, []string{"would write /etc/kubernetes/pki/ca.crt"}) {
		t.Errorf("worker plan %q", plan)
	}
	// A second sync changes nothing.
	if again, err := syncCertificates(dry, certs, changed); err != nil || len(again) != 0 {
		t.Errorf("second sync copied %q (%v)", again, err)
	}
}

// TestJoinDoneFilter: kubeadm join's closing message is dropped, with the
// lines around it kept.
func TestJoinDoneFilter(t *testing.T) {
	in := []string{"[kubelet-start] Starting the kubelet", "", "This node has joined the cluster:",
		"* Certificate signing request was sent to apiserver and a response was received.", "",
		"Run 'kubectl get nodes' on the control-plane to see this node join the cluster.", "", "after"}
	keep := joinDoneFilter()
	var out []string
	for _, l := range in {
		if keep(l) {
			out = append(out, l)
		}
	}
	if want := []string{"[kubelet-start] Starting the kubelet", "", "", "after"}; !reflect.DeepEqual(out, want) {
		t.Errorf("kept %q, want %q", out, want)
	}
}

func TestPreflightWarnings(t *testing.T) {
	got := PreflightWarnings([]string{"[preflight] Running pre-flight checks",
		"\t[WARNING Hostname]: hostname \"cp1\" could not be reached", "[preflight] done"})
	if want := []string{`Hostname: hostname "cp1" could not be reached`}; !reflect.DeepEqual(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
}
