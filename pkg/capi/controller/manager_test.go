//go:build !windows

package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// TestManagerWatches runs the reconciler in a controller-runtime manager,
// as machineadm-controller does, and checks that the watches drive it: a
// worker config waits while the control plane is not initialised and gets
// its data Secret, with no direct Reconcile call, once the Cluster says it
// is. The manager caches as machineadm-controller's does
// (SecretCacheOptions): the data Secret is looked up in the metadata
// cache.
func TestManagerWatches(t *testing.T) {
	f := newFixture(t)
	_, err := ensureCAs(f.ctx, k8s, f.cluster, "", true)
	f.must(err)
	mgr, err := ctrl.NewManager(testEnv.Config, ctrl.Options{
		Scheme:  testScheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   secretCacheFor(f.ns),
		// As pkg/capi/manager.ClientOptions (that package imports this one).
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}},
	})
	f.must(err)
	r := &Reconciler{Sealer: SpecSealer{}, SecretMeta: mgr.GetCache()}
	skip := true
	f.must(r.SetupWithManager(mgr, controller.Options{SkipNameValidation: &skip}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	f.machine("w1", false)
	waitFor(t, "WaitingForControlPlaneInitialized", func() bool {
		return cond(get(t, f.ns, "w1"), DataSecretAvailableCondition).Reason == ReasonWaitingForInit
	})
	f.setClusterStatus(true, true)
	waitFor(t, "the data Secret", func() bool {
		return k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "w1"}, &corev1.Secret{}) == nil
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	// Generous: the machine running the tests may be busy.
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) { return ok(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func get(t *testing.T, ns, name string) *bootstrapv1.MachineadmConfig {
	t.Helper()
	c := &bootstrapv1.MachineadmConfig{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// secretCacheFor is SecretCacheOptions limited to namespace ns.
func secretCacheFor(ns string) cache.Options {
	o := SecretCacheOptions()
	o.DefaultNamespaces = map[string]cache.Config{ns: {}}
	return o
}
