//go:build !windows

package controller

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/machineadm/machineadm/internal/testassets"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// The envtest tests run the reconciler against a real kube-apiserver and
// etcd (the binaries the e2e builds, as pkg/capi/controller's tests do)
// with the real CRDs. Nothing else runs: the tests play Cluster API's core
// controllers (they set Machine status: Node, Ready, Deleting, health
// check conditions, and hold deleted Machines with a finalizer as the
// Machine controller does), the infrastructure provider (FakeMachine
// kinds that accept any spec) and the workload cluster's etcd (fakeEtcd,
// whose members follow the Machines' Nodes). Without the binaries the
// tests skip, unless MACHINEADM_REQUIRE_ENVTEST=1.

var (
	testEnv     *envtest.Environment
	k8s         client.Client
	testScheme  = runtime.NewScheme()
	skipMessage string
)

// coreFinalizer stands for Cluster API's Machine controller finalizer:
// it keeps a deleted Machine until the test lets it go.
const coreFinalizer = "test.machineadm.io/plays-machine-controller"

// assetsDir is where kube-apiserver and etcd are (testassets.Dir).
func assetsDir() string { return testassets.Dir() }

func TestMain(m *testing.M) {
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, bootstrapv1.AddToScheme, cpv1.AddToScheme} {
		if err := add(testScheme); err != nil {
			panic(err)
		}
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir := assetsDir()
	if dir == "" {
		skipMessage = "no kube-apiserver and etcd binaries in KUBEBUILDER_ASSETS or the e2e cache (make e2e-prepare builds them)"
		if os.Getenv("MACHINEADM_REQUIRE_ENVTEST") == "1" {
			fmt.Fprintln(os.Stderr, "MACHINEADM_REQUIRE_ENVTEST=1 but", skipMessage)
			return 1
		}
		return m.Run()
	}
	ctrl.SetLogger(logr.Discard())
	testEnv = &envtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     []string{"../../../../contrib/cluster-api/crd", "../../controller/testdata/crd", "testdata/crd"},
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
	return m.Run()
}

func requireEnv(t testing.TB) {
	t.Helper()
	if testEnv == nil {
		t.Skip(skipMessage)
	}
}

// fakeEtcd stands for the workload cluster's stacked etcd: every
// control-plane Machine with a Node is a member (as kubeadm's join makes
// it) until the controller removes it; members named in sick are
// unhealthy.
type fakeEtcd struct {
	mu      sync.Mutex
	ns      string
	removed map[string]bool
	sick    map[string]bool
	calls   []string
}

func (e *fakeEtcd) dial(ctx context.Context, c client.Client, cl *clusterv1.Cluster, _ []string) (EtcdClient, error) {
	return &fakeEtcdConn{e: e, c: c}, nil
}

type fakeEtcdConn struct {
	e *fakeEtcd
	c client.Client
}

func memberID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

func (f *fakeEtcdConn) Members(ctx context.Context) ([]EtcdMember, error) {
	list := &clusterv1.MachineList{}
	if err := f.c.List(ctx, list, client.InNamespace(f.e.ns)); err != nil {
		return nil, err
	}
	f.e.mu.Lock()
	defer f.e.mu.Unlock()
	var out []EtcdMember
	for _, m := range list.Items {
		n := m.Status.NodeRef.Name
		if n == "" || f.e.removed[n] {
			continue
		}
		out = append(out, EtcdMember{ID: memberID(n), Name: n, Healthy: !f.e.sick[n]})
	}
	return out, nil
}

func (f *fakeEtcdConn) RemoveMember(ctx context.Context, id uint64) error {
	ms, err := f.Members(ctx)
	if err != nil {
		return err
	}
	f.e.mu.Lock()
	defer f.e.mu.Unlock()
	for _, m := range ms {
		if m.ID == id {
			f.e.removed[m.Name] = true
			f.e.calls = append(f.e.calls, m.Name)
			return nil
		}
	}
	return fmt.Errorf("no member %x", id)
}

func (f *fakeEtcdConn) Close() error { return nil }

// fixture is one Cluster with a MachineadmControlPlane in its own
// namespace.
type fixture struct {
	t       testing.TB
	ctx     context.Context
	ns      string
	cluster *clusterv1.Cluster
	mcp     *cpv1.MachineadmControlPlane
	etcd    *fakeEtcd
	r       *Reconciler
	now     time.Time
}

var nsCounter int

func newFixture(t testing.TB, replicas int32, mutate func(*cpv1.MachineadmControlPlane)) *fixture {
	requireEnv(t)
	nsCounter++
	// The controller's clock runs ten minutes behind the API server's, so
	// that objects the server stamps (to the second) are always later
	// than the remediation times the controller records.
	f := &fixture{t: t, ctx: context.Background(), ns: fmt.Sprintf("cp%d-%d", nsCounter, time.Now().UnixNano()%100000), now: time.Now().Add(-10 * time.Minute)}
	f.etcd = &fakeEtcd{ns: f.ns, removed: map[string]bool{}, sick: map[string]bool{}}
	f.r = &Reconciler{Client: k8s, EtcdDialer: f.etcd.dial, Now: func() time.Time { return f.now },
		WorkloadClient: func(context.Context, client.Client, *clusterv1.Cluster) (client.Client, error) { return k8s, nil }}
	ensureKubeadmConfig(t)
	f.must(k8s.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}))
	tpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "FakeMachineTemplate",
		"metadata": map[string]any{"name": "tpl1", "namespace": f.ns},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"size": "large"}}},
	}}
	f.must(k8s.Create(f.ctx, tpl))
	f.cluster = &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: f.ns},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "10.0.0.10", Port: 6443},
			ControlPlaneRef:      clusterv1.ContractVersionedObjectReference{APIGroup: cpv1.GroupVersion.Group, Kind: "MachineadmControlPlane", Name: "cp"},
		},
	}
	f.must(k8s.Create(f.ctx, f.cluster))
	f.cluster.Status.Initialization.InfrastructureProvisioned = ptr(true)
	f.cluster.Status.FailureDomains = []clusterv1.FailureDomain{{Name: "z1", ControlPlane: ptr(true)}, {Name: "z2", ControlPlane: ptr(true)}, {Name: "w", ControlPlane: ptr(false)}}
	f.must(k8s.Status().Update(f.ctx, f.cluster))
	f.mcp = &cpv1.MachineadmControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: f.ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: "c1", UID: f.cluster.UID,
		}}},
		Spec: cpv1.MachineadmControlPlaneSpec{
			Replicas: ptr(replicas),
			Version:  "v1.36.4",
			MachineTemplate: cpv1.MachineTemplate{
				ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{"team": "infra"}},
				Spec: cpv1.MachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "FakeMachineTemplate", Name: "tpl1"},
					Deletion:          cpv1.MachineDeletion{NodeDrainTimeoutSeconds: ptr(int32(120))},
				},
			},
			MachineadmConfigSpec: bootstrapv1.MachineadmConfigSpec{
				Agent:      bootstrapv1.AgentSource{URL: "https://example.invalid/machineadm", SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
				Recipients: []string{"age1envtestrecipient"},
			},
		},
	}
	if mutate != nil {
		mutate(f.mcp)
	}
	f.must(k8s.Create(f.ctx, f.mcp))
	return f
}

// ensureKubeadmConfig plays the workload cluster's kubeadm-config (the
// envtest API server stands for every fixture's workload cluster; the
// fixtures run one at a time): created at the fixtures' version v1.36.4
// when missing, left as it is otherwise.
func ensureKubeadmConfig(t testing.TB) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: kubeadmConfigNamespace, Name: kubeadmConfigName},
		Data:       map[string]string{clusterConfigurationKey: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.4\n"},
	}
	if err := k8s.Create(context.Background(), cm); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// reconcile runs one pass and returns the control plane as stored.
func (f *fixture) reconcile() *cpv1.MachineadmControlPlane {
	f.t.Helper()
	if _, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.mcp)}); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	out := &cpv1.MachineadmControlPlane{}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(f.mcp), out))
	return out
}

// machines lists the namespace's Machines, oldest first; the test's
// stand-in finalizer is added to new ones.
func (f *fixture) machines() []clusterv1.Machine {
	f.t.Helper()
	list := &clusterv1.MachineList{}
	f.must(k8s.List(f.ctx, list, client.InNamespace(f.ns)))
	for i := range list.Items {
		m := &list.Items[i]
		if m.DeletionTimestamp.IsZero() && !containsString(m.Finalizers, coreFinalizer) {
			p := client.MergeFrom(m.DeepCopy())
			m.Finalizers = append(m.Finalizers, coreFinalizer)
			f.must(k8s.Patch(f.ctx, m, p))
		}
	}
	items := list.Items
	for i := 1; i < len(items); i++ {
		for j := i; j > 0 && items[j].CreationTimestamp.Before(&items[j-1].CreationTimestamp); j-- {
			items[j], items[j-1] = items[j-1], items[j]
		}
	}
	return items
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// live are the Machines without a deletion timestamp.
func (f *fixture) live() []clusterv1.Machine {
	var out []clusterv1.Machine
	for _, m := range f.machines() {
		if m.DeletionTimestamp.IsZero() {
			out = append(out, m)
		}
	}
	return out
}

// ready plays the Machine controller for a Machine whose machine came
// up: Node "node-<name>", an internal address, Ready and Available.
func (f *fixture) ready(name string) {
	f.t.Helper()
	m := &clusterv1.Machine{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, m))
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: "node-" + name}
	m.Status.Addresses = clusterv1.MachineAddresses{{Type: clusterv1.MachineInternalIP, Address: "192.0.2.1"}}
	for _, t := range []string{clusterv1.MachineReadyCondition, clusterv1.MachineAvailableCondition} {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Test"})
	}
	f.must(k8s.Status().Update(f.ctx, m))
}

func (f *fixture) setMachineCondition(name, typ string, s metav1.ConditionStatus, reason string) {
	f.t.Helper()
	m := &clusterv1.Machine{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, m))
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason})
	f.must(k8s.Status().Update(f.ctx, m))
}

// waitingForHook plays the Machine controller after drain: the Machine's
// Deleting condition waits on the pre-terminate hook.
func (f *fixture) waitingForHook(name string) {
	f.setMachineCondition(name, clusterv1.MachineDeletingCondition, metav1.ConditionTrue, clusterv1.MachineDeletingWaitingForPreTerminateHookReason)
}

// release lets a deleted Machine go once no pre-terminate hook holds it,
// as the Machine controller does; it fails when the hook is still there.
func (f *fixture) release(name string) {
	f.t.Helper()
	m := &clusterv1.Machine{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, m))
	if _, held := m.Annotations[PreTerminateHookAnnotation]; held {
		f.t.Fatalf("Machine %s still holds the pre-terminate hook", name)
	}
	p := client.MergeFrom(m.DeepCopy())
	m.Finalizers = nil
	f.must(k8s.Patch(f.ctx, m, p))
}

// updateSpec changes the control plane's spec.
func (f *fixture) updateSpec(mut func(*cpv1.MachineadmControlPlane)) {
	f.t.Helper()
	cur := &cpv1.MachineadmControlPlane{}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(f.mcp), cur))
	mut(cur)
	f.must(k8s.Update(f.ctx, cur))
}

func cond(mcp *cpv1.MachineadmControlPlane, t string) metav1.Condition {
	if c := meta.FindStatusCondition(mcp.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}
