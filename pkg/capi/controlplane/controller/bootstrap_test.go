//go:build !windows

package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	bootstrapctl "github.com/machineadm/machineadm/pkg/capi/controller"
	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/seal"
)

// TestEnvtestWithBootstrapProvider runs the bootstrap provider's real
// reconciler on the configs the control plane creates: the first Machine
// gets init data, and once the control plane reports itself initialised
// (which the test copies to the Cluster, as Cluster API's Cluster
// controller does) the second gets control-plane join data; the bootstrap
// provider uses the CA Secrets the control plane made, which stay its
// own. The same API server plays the workload
// cluster (its bootstrap tokens and kubeadm-certs).
func TestEnvtestWithBootstrapProvider(t *testing.T) {
	id, err := seal.GenerateHPKEIdentity(seal.HPKESuiteP384)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, 3, func(c *cpv1.MachineadmControlPlane) {
		c.Spec.MachineadmConfigSpec.Recipients = []string{id.Recipient()}
	})
	wl, err := kubernetes.NewForConfig(rest.CopyConfig(testEnv.Config))
	if err != nil {
		t.Fatal(err)
	}
	f.cluster.Spec.ClusterNetwork = clusterv1.ClusterNetwork{
		Pods:     clusterv1.NetworkRanges{CIDRBlocks: []string{"10.244.0.0/16"}},
		Services: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.96.0.0/12"}},
	}
	cur := &clusterv1.Cluster{}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(f.cluster), cur))
	cur.Spec.ClusterNetwork = f.cluster.Spec.ClusterNetwork
	f.must(k8s.Update(f.ctx, cur))
	br := &bootstrapctl.Reconciler{
		Client: k8s, Sealer: bootstrapctl.SpecSealer{TempDir: t.TempDir()},
		WorkloadClient: func(context.Context, client.Client, *clusterv1.Cluster) (corev1client.CoreV1Interface, error) {
			return wl.CoreV1(), nil
		},
	}
	bootstrap := func(m *clusterv1.Machine) string {
		t.Helper()
		// Cluster API's Machine controller makes the Machine the config's
		// controller.
		cfg := &bootstrapv1.MachineadmConfig{}
		f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg))
		p := client.MergeFrom(cfg.DeepCopy())
		cfg.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID, Controller: ptr(true)}}
		f.must(k8s.Patch(f.ctx, cfg, p))
		for range 3 {
			if _, err := br.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cfg)}); err != nil {
				t.Fatalf("bootstrap reconcile: %v", err)
			}
		}
		f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(cfg), cfg))
		if cfg.Status.DataSecretName == "" {
			t.Fatalf("config %s has no data Secret: %+v", cfg.Name, cfg.Status.Conditions)
		}
		ds := &corev1.Secret{}
		f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: cfg.Status.DataSecretName}, ds))
		return ds.Annotations[bootstrapctl.ActionAnnotation]
	}

	f.reconcile()
	ms := f.live()
	if a := bootstrap(&ms[0]); a != "init" {
		t.Fatalf("first Machine's action %q, want init", a)
	}
	f.ready(ms[0].Name)
	mcp := f.reconcile()
	if !ptrTrue(mcp.Status.Initialization.ControlPlaneInitialized) {
		t.Fatal("not initialised")
	}
	// Cluster API's Cluster controller copies the signal to the Cluster.
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(f.cluster), cur))
	cur.Status.Initialization.ControlPlaneInitialized = ptr(true)
	f.must(k8s.Status().Update(f.ctx, cur))
	second := f.pending()
	m := &clusterv1.Machine{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: second}, m))
	if a := bootstrap(m); a != "control-plane-join" {
		t.Fatalf("second Machine's action %q, want control-plane-join", a)
	}
	for _, s := range []string{"ca", "etcd", "proxy", "sa"} {
		sec := &corev1.Secret{}
		f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-" + s}, sec))
		if c := metav1.GetControllerOf(sec); c == nil || c.UID != mcp.UID || len(sec.OwnerReferences) != 1 {
			t.Fatalf("Secret c1-%s owners %v after the bootstrap provider ran", s, sec.OwnerReferences)
		}
	}
}
