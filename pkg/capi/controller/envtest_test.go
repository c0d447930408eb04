//go:build !windows

// envtest cannot build for Windows: controller-runtime v0.25.2's
// pkg/internal/testing/process declares signalProcess twice there.

package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/machineadm/machineadm/internal/testassets"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/capi/leakcheck"
	"github.com/machineadm/machineadm/pkg/render"
	"github.com/machineadm/machineadm/pkg/seal"
)

// The integration tests run against a real kube-apiserver and etcd,
// envtest-style: the binaries the e2e builds ($MACHINEADM_E2E_CACHE/bin,
// default /var/cache/machineadm-e2e/bin) or any directory in
// KUBEBUILDER_ASSETS. The same API server plays the management cluster
// and, through a kubeconfig Secret, the workload cluster. Without the
// binaries the tests skip, unless MACHINEADM_REQUIRE_ENVTEST=1 (CI), where
// they fail.

var (
	testEnv     *envtest.Environment
	k8s         client.Client
	workload    kubernetes.Interface
	kubeconfig  []byte
	testScheme  = runtime.NewScheme()
	skipMessage string
)

const agentSHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// assetsDir is where kube-apiserver and etcd are (testassets.Dir).
func assetsDir() string { return testassets.Dir() }

// cacheDir is the e2e cache (testassets.CacheDir).
func cacheDir() string { return testassets.CacheDir() }

func TestMain(m *testing.M) {
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, bootstrapv1.AddToScheme} {
		if err := add(testScheme); err != nil {
			panic(err)
		}
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir := assetsDir()
	if dir == "" {
		skipMessage = "no kube-apiserver and etcd binaries in KUBEBUILDER_ASSETS or " + filepath.Join(cacheDir(), "bin") + " (make e2e-prepare builds them)"
		if os.Getenv("MACHINEADM_REQUIRE_ENVTEST") == "1" {
			fmt.Fprintln(os.Stderr, "MACHINEADM_REQUIRE_ENVTEST=1 but", skipMessage)
			return 1
		}
		return m.Run()
	}
	ctrl.SetLogger(discardLogger())
	testEnv = &envtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     []string{"../../../contrib/cluster-api/crd", "testdata/crd"},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver and etcd:", err)
		return 1
	}
	defer testEnv.Stop()
	if k8s, err = client.New(cfg, client.Options{Scheme: testScheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	user, err := testEnv.AddUser(envtest.User{Name: "workload-admin", Groups: []string{"system:masters"}}, nil)
	if err == nil {
		kubeconfig, err = user.KubeConfig()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload kubeconfig:", err)
		return 1
	}
	workload = kubernetes.NewForConfigOrDie(rest.CopyConfig(cfg))
	return m.Run()
}

func requireEnv(t testing.TB) {
	t.Helper()
	if testEnv == nil {
		t.Skip(skipMessage)
	}
}

// fixture is one Cluster in its own namespace.
type fixture struct {
	t        testing.TB
	ctx      context.Context
	ns       string
	cluster  *clusterv1.Cluster
	r        *Reconciler
	identity seal.Identity
	recip    string
	now      time.Time
}

var nsCounter int

func newFixture(t testing.TB) *fixture {
	requireEnv(t)
	nsCounter++
	f := &fixture{t: t, ctx: context.Background(), ns: fmt.Sprintf("t%d-%d", nsCounter, time.Now().UnixNano()%100000), now: time.Now()}
	f.must(k8s.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}))
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	f.must(err)
	f.identity, f.recip = id, id.Recipient()
	f.r = &Reconciler{Client: k8s, Sealer: SpecSealer{TempDir: t.TempDir()}, Now: func() time.Time { return f.now }}
	f.cluster = &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: f.ns},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "10.0.0.10", Port: 6443},
			ClusterNetwork: clusterv1.ClusterNetwork{
				Pods:     clusterv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}},
				Services: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.96.0.0/12"}},
			},
		},
	}
	f.must(k8s.Create(f.ctx, f.cluster))
	f.setClusterStatus(true, false)
	f.must(k8s.Create(f.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "c1-kubeconfig", Namespace: f.ns},
		Type:       ClusterSecretType,
		Data:       map[string][]byte{"value": kubeconfig},
	}))
	return f
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) setClusterStatus(infra, initialized bool) {
	f.t.Helper()
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(f.cluster), f.cluster))
	f.cluster.Status.Initialization.InfrastructureProvisioned = ptr(infra)
	// Without a control-plane provider Cluster API's core reports init only
	// through the ControlPlaneInitialized condition; the tests use that.
	status := metav1.ConditionFalse
	if initialized {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&f.cluster.Status.Conditions, metav1.Condition{Type: clusterv1.ClusterControlPlaneInitializedCondition, Status: status, Reason: "Test"})
	f.must(k8s.Status().Update(f.ctx, f.cluster))
}

// initialized makes the Cluster look initialised by another control plane:
// CA Secrets and certificate key exist.
func (f *fixture) initialized() {
	f.t.Helper()
	_, err := ensureCAs(f.ctx, k8s, f.cluster, "", true)
	f.must(err)
	_, err = ensureCertificateKey(f.ctx, k8s, f.cluster, true)
	f.must(err)
	f.setClusterStatus(true, true)
}

func (f *fixture) machine(name string, controlPlane bool) (*clusterv1.Machine, *bootstrapv1.MachineadmConfig) {
	f.t.Helper()
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
		Spec: clusterv1.MachineSpec{
			ClusterName: "c1",
			Version:     "v1.37.2",
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: bootstrapv1.GroupVersion.Group, Kind: "MachineadmConfig", Name: name,
			}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.e2e.machineadm.io", Kind: "NspawnMachine", Name: name},
		},
	}
	if controlPlane {
		m.Labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	f.must(k8s.Create(f.ctx, m))
	c := &bootstrapv1.MachineadmConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: f.ns,
			Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID,
			}},
		},
		Spec: f.spec(),
	}
	f.must(k8s.Create(f.ctx, c))
	return m, c
}

func (f *fixture) spec() bootstrapv1.MachineadmConfigSpec {
	return bootstrapv1.MachineadmConfigSpec{
		Agent:      bootstrapv1.AgentSource{URL: "https://example.invalid/machineadm", SHA256: agentSHA},
		Recipients: []string{f.recip},
		Node:       bootstrapv1.NodeSpec{Labels: map[string]string{"tier": "test"}},
		Host:       bootstrapv1.HostSpec{KernelModules: []string{"br_netfilter"}, Sysctl: map[string]string{"net.ipv4.ip_forward": "1"}},
	}
}

// reconcile runs the reconciler on the config until it stops asking for
// an immediate retry (at most 5 rounds) and returns the config.
func (f *fixture) reconcile(name string) *bootstrapv1.MachineadmConfig {
	f.t.Helper()
	key := client.ObjectKey{Namespace: f.ns, Name: name}
	for range 5 {
		res, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: key})
		f.must(err)
		if !res.Requeue {
			break
		}
	}
	c := &bootstrapv1.MachineadmConfig{}
	if err := k8s.Get(f.ctx, key, c); err != nil {
		return nil
	}
	return c
}

// namesData sets the Machine's spec.bootstrap.dataSecretName to its
// config's data Secret, as Cluster API's Machine controller does once the
// config reports it (and clusterctl move carries over).
func (f *fixture) namesData(name string) {
	f.t.Helper()
	m := &clusterv1.Machine{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, m))
	m.Spec.Bootstrap.DataSecretName = &name
	f.must(k8s.Update(f.ctx, m))
}

func (f *fixture) dataSecret(name string) *corev1.Secret {
	f.t.Helper()
	s := &corev1.Secret{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, s))
	return s
}

func cond(c *bootstrapv1.MachineadmConfig, typ string) metav1.Condition {
	for _, x := range c.Status.Conditions {
		if x.Type == typ {
			return x
		}
	}
	return metav1.Condition{}
}

func wantCond(t testing.TB, c *bootstrapv1.MachineadmConfig, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	got := cond(c, typ)
	if got.Status != status || (reason != "" && got.Reason != reason) {
		t.Fatalf("%s: condition %s = %s/%s (%q), want %s/%s", c.Name, typ, got.Status, got.Reason, got.Message, status, reason)
	}
	return got
}

// opened extracts the sealed spec from cloud-config bootstrap data, opens
// it with the fixture's identity and returns the clear spec and the items.
func (f *fixture) opened(data []byte) (string, map[string][]byte) {
	f.t.Helper()
	clear, env, err := seal.Split(f.specFile(data))
	f.must(err)
	if env == nil {
		f.t.Fatalf("the spec in the bootstrap data carries no SealedSecrets document")
	}
	e, err := seal.Parse(env)
	f.must(err)
	digest, err := seal.SpecDigest(clear)
	f.must(err)
	o, err := seal.Open(e, seal.Expect{ClusterName: "c1", MachineName: "any-host", SpecDigest: digest}, f.identity)
	f.must(err)
	return string(clear), o.Items
}

// specFile extracts the sealed spec file from cloud-config bootstrap data.
func (f *fixture) specFile(data []byte) []byte {
	f.t.Helper()
	var cc struct {
		WriteFiles []struct{ Path, Encoding, Content string } `yaml:"write_files"`
	}
	f.must(yaml.Unmarshal(data, &cc))
	for _, w := range cc.WriteFiles {
		if w.Path != render.LinuxSpecPath {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(w.Content)
		f.must(err)
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		f.must(err)
		file, err := io.ReadAll(zr)
		f.must(err)
		return file
	}
	f.t.Fatalf("no %s in the bootstrap data", render.LinuxSpecPath)
	return nil
}

// noLeak fails when the data Secret holds a secret in the clear, by shape
// or by value.
func (f *fixture) noLeak(s *corev1.Secret, known ...[]byte) {
	f.t.Helper()
	for k, v := range s.Data {
		if found := leakcheck.Check(v, leakcheck.Options{Known: known, AllowHex: []string{agentSHA}}); len(found) > 0 {
			f.t.Fatalf("data Secret %s key %s holds secrets in the clear: %v", s.Name, k, found)
		}
	}
	for k, v := range s.Annotations {
		if found := leakcheck.Check([]byte(v), leakcheck.Options{Known: known}); len(found) > 0 {
			f.t.Fatalf("data Secret %s annotation %s: %v", s.Name, k, found)
		}
	}
}

// tokenExists reports whether the workload cluster holds the bootstrap
// token with this ID.
func tokenExists(t testing.TB, id string) (*corev1.Secret, bool) {
	t.Helper()
	s, err := workload.CoreV1().Secrets("kube-system").Get(context.Background(), "bootstrap-token-"+id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return s, true
}

func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

type ctrlRequest = ctrl.Request
