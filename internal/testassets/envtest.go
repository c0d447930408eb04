//go:build !windows

// envtest cannot build for Windows: controller-runtime's
// pkg/internal/testing/process declares signalProcess twice there.

package testassets

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// StartEnvtest starts kube-apiserver and etcd (the binaries Dir finds) on
// loopback for t, stops them at t's end, and returns their admin
// configuration. Without the binaries it skips t, or fails it when
// MACHINEADM_REQUIRE_ENVTEST=1; a start that fails fails t.
// controller-runtime's log is discarded.
func StartEnvtest(t *testing.T) *rest.Config {
	t.Helper()
	dir := Dir()
	if dir == "" {
		msg := "no kube-apiserver and etcd binaries in KUBEBUILDER_ASSETS or the e2e cache's bin (make e2e-prepare builds them)"
		if os.Getenv("MACHINEADM_REQUIRE_ENVTEST") == "1" {
			t.Fatal("MACHINEADM_REQUIRE_ENVTEST=1 but " + msg)
		}
		t.Skip(msg)
	}
	logf.SetLogger(logr.Discard())
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping kube-apiserver and etcd: %v", err)
		}
	})
	return cfg
}
