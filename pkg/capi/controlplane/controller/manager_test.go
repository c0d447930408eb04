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
)

// TestManagerWatches runs the reconciler in a controller-runtime manager,
// as machineadm-controller does, with its cached client: the control
// plane's creation starts the first Machine, the Machine becoming Ready
// the second. It failed when the controller patched a Machine's
// conditions from a stale cached copy: the merge patch replaced the list
// and wiped the Ready condition just set, so the second never came.
func TestManagerWatches(t *testing.T) {
	f := newFixture(t, 3, nil)
	mgr, err := ctrl.NewManager(testEnv.Config, ctrl.Options{
		Scheme:  testScheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{f.ns: {}}},
		Client:  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}},
	})
	f.must(err)
	r := &Reconciler{EtcdDialer: f.etcd.dial, WorkloadClient: f.r.WorkloadClient, Now: func() time.Time { return f.now }}
	skip := true
	f.must(r.SetupWithManager(mgr, controller.Options{SkipNameValidation: &skip}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the first Machine", func() bool { return len(f.live()) == 1 })
	f.ready(f.live()[0].Name)
	waitFor(t, "the second Machine", func() bool { return len(f.live()) == 2 })
	// Never two first Machines, nor a third before the second is Ready.
	time.Sleep(2 * time.Second)
	if n := len(f.live()); n != 2 {
		t.Fatalf("%d Machines while the second is not Ready, want 2", n)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	// Generous: the machine running the tests may be busy.
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) { return ok(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}
