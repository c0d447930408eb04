package run

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	discoverytoken "k8s.io/kubernetes/cmd/kubeadm/app/discovery/token"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/apiclient"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pubkeypin"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/kubeadmtest"
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

// testToken is the join token of the stand-in tests.
const testToken = "abcdef.0123456789abcdef"

// testCA is a CA of the test's own making (kubeadmtest.NewCA).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	cert, key, pemBytes := kubeadmtest.NewCA(t, name)
	return &testCA{cert: cert, key: key, pem: pemBytes}
}

// discoverLikeKubeadmDryRun runs kubeadm's own token discovery the way
// kubeadm join's dry run does (cmd/kubeadm/app/cmd/join.go Client): its
// dry-run client, whose GETs go first to the discovery endpoint of the
// configuration and only then to kubeadm's own stand-in.
func discoverLikeKubeadmDryRun(t *testing.T, endpoint, token string, pins []string) error {
	t.Helper()
	dr := apiclient.NewDryRun()
	rc, err := clientcmd.NewDefaultClientConfig(*discoverytoken.BuildInsecureBootstrapKubeConfig(endpoint), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := dr.WithRestConfig(rc); err != nil {
		t.Fatal(err)
	}
	dr.WithDefaultMarshalFunction().WithWriter(io.Discard).AppendReactor(dr.GetClusterInfoReactor())
	cfg := &kubeadmapi.Discovery{BootstrapToken: &kubeadmapi.BootstrapTokenDiscovery{Token: token, APIServerEndpoint: endpoint, CACertHashes: pins}}
	kc, err := discoverytoken.RetrieveValidatedConfigInfo(dr.FakeClient(), cfg, 20*time.Second)
	if err == nil {
		// The discovered kubeconfig names the stand-in itself, so that the
		// dry-run client's reads never leave it for the spec's endpoint.
		if _, c, err := kubeconfigutil.GetClusterFromKubeConfig(kc); err != nil || c.Server != "https://"+endpoint {
			t.Errorf("discovered cluster %s (%v), want the stand-in https://%s", c.Server, err, endpoint)
		}
	}
	return err
}

// TestClusterInfoStandIn: kubeadm's dry-run discovery against the
// stand-in succeeds for the spec's token whatever its ID — "abcdef",
// the ID of kubeadm's own stand-in, among them — with the pin of the
// spec's CA, and fails as DiscoveryFailed with another pin. A stand-in
// without the spec's CA makes one, whose pin the dry run adds.
func TestClusterInfoStandIn(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	other := newTestCA(t, "another-ca")
	for _, token := range []string{testToken, "a1b2c3.0123456789abcdef", "zz9xq1.0123456789abcdef"} {
		s, err := StartClusterInfoStandIn(StandInOptions{Token: token, Endpoint: "cp.demo.example:6443", CAPEM: ca.pem})
		if err != nil {
			t.Fatal(err)
		}
		if s.MadeCA || s.CACertHash != pubkeypin.Hash(ca.cert) {
			t.Errorf("stand-in CA: made %v, hash %s", s.MadeCA, s.CACertHash)
		}
		if err := discoverLikeKubeadmDryRun(t, s.Endpoint, token, []string{pubkeypin.Hash(ca.cert)}); err != nil {
			t.Errorf("token ID %s, right pin: %v", token[:6], err)
		}
		err = discoverLikeKubeadmDryRun(t, s.Endpoint, token, []string{pubkeypin.Hash(other.cert)})
		if err == nil {
			t.Errorf("token ID %s: a wrong pin passed", token[:6])
		} else if c, _ := Classify(Phase{Name: "preflight", Class: errclass.PreflightFailed}, err, nil); c != errclass.DiscoveryFailed {
			t.Errorf("token ID %s, wrong pin: class %s (%v)", token[:6], c, err)
		}
		// Another token than the one it was signed for is refused.
		if err := discoverLikeKubeadmDryRun(t, s.Endpoint, token[:7]+"fedcba9876543210", []string{pubkeypin.Hash(ca.cert)}); err == nil {
			t.Errorf("token ID %s: a token with another secret passed", token[:6])
		}
		s.Close()
	}
	s, err := StartClusterInfoStandIn(StandInOptions{Token: testToken, Endpoint: "cp.demo.example:6443"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.MadeCA || !strings.HasPrefix(s.CACertHash, "sha256:") {
		t.Errorf("made CA %v, hash %q", s.MadeCA, s.CACertHash)
	}
	if err := discoverLikeKubeadmDryRun(t, s.Endpoint, testToken, []string{pubkeypin.Hash(ca.cert), s.CACertHash}); err != nil {
		t.Errorf("made CA with its pin added: %v", err)
	}
	if _, err := StartClusterInfoStandIn(StandInOptions{Token: "not-a-token", Endpoint: "cp.demo.example:6443"}); err == nil || strings.Contains(err.Error(), "not-a-token") {
		t.Errorf("malformed token: %v", err)
	}
}

// TestClusterInfoStandInControlPlane: for a control-plane join the
// stand-in is the whole cluster: its cluster-info names itself, it serves
// kubeadm-config with itself as controlPlaneEndpoint, and a client that
// verifies it with the cluster CA (the dry run's admin.conf) trusts it.
func TestClusterInfoStandInControlPlane(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	keyDER, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartClusterInfoStandIn(StandInOptions{Token: testToken, Endpoint: "cp.demo.example:6443", CAPEM: ca.pem,
		CAKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), ControlPlane: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs, err := clientset.NewForConfig(&rest.Config{Host: "https://" + s.Endpoint, TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem}})
	if err != nil {
		t.Fatal(err)
	}
	ci, err := cs.CoreV1().ConfigMaps("kube-public").Get(context.Background(), "cluster-info", metav1.GetOptions{})
	if err != nil || !strings.Contains(ci.Data["kubeconfig"], "server: https://"+s.Endpoint) {
		t.Fatalf("cluster-info verified with the CA: %v %v", ci, err)
	}
	kc, err := cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "kubeadm-config", metav1.GetOptions{})
	if err != nil || !strings.Contains(kc.Data["ClusterConfiguration"], "controlPlaneEndpoint: "+s.Endpoint+"\n") {
		t.Errorf("kubeadm-config: %v %v", kc, err)
	}
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "kubelet-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("another object: %v, want NotFound", err)
	}
}

// TestRestoreEndpoint: the kubeconfigs a join dry run wrote name the spec's
// endpoint again, with their mode; other files are left alone.
func TestRestoreEndpoint(t *testing.T) {
	s, err := StartClusterInfoStandIn(StandInOptions{Token: testToken, Endpoint: "cp.demo.example:6443"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := t.TempDir()
	kc := "clusters:\n- cluster:\n    server: https://" + s.Endpoint + "\n  name: kubernetes\n"
	other := "server: https://" + s.Endpoint + "\n"
	for name, content := range map[string]string{"bootstrap-kubelet.conf": kc, "config.yaml": other} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RestoreEndpoint(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "bootstrap-kubelet.conf"))
	if err != nil || !strings.Contains(string(got), "server: https://cp.demo.example:6443\n") || strings.Contains(string(got), s.Endpoint) {
		t.Errorf("bootstrap-kubelet.conf (%v):\n%s", err, got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "bootstrap-kubelet.conf")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode changed: %v %v", fi.Mode(), err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); string(got) != other {
		t.Errorf("a file that is no kubeconfig was changed:\n%s", got)
	}
	if err := s.RestoreEndpoint(filepath.Join(dir, "absent")); err != nil {
		t.Errorf("a directory the dry run did not write: %v", err)
	}
	var none *ClusterInfoStandIn
	if err := none.RestoreEndpoint(dir); err != nil {
		t.Errorf("nil stand-in: %v", err)
	}
}
