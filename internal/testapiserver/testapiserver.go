//go:build !windows

// envtest cannot build for Windows: controller-runtime v0.25.2's
// pkg/internal/testing/process declares signalProcess twice there.

// Package testapiserver runs a real kube-apiserver and etcd for a test
// binary, envtest-style (controller-runtime's envtest), from the binaries
// the e2e builds ($MACHINEADM_E2E_CACHE/bin, default
// /var/cache/machineadm-e2e/bin) or any directory in KUBEBUILDER_ASSETS,
// as pkg/capi/controller's integration tests do. It is started once, on
// first use, and stopped by Stop (call it from TestMain). Without the
// binaries a test using it skips, unless MACHINEADM_REQUIRE_ENVTEST=1 (CI),
// where it fails.
package testapiserver

import (
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Server is the running API server.
type Server struct {
	// Config reaches it as a member of system:masters.
	Config *rest.Config
	// Client is a client of Config.
	Client kubernetes.Interface
	// Kubeconfig is a kubeconfig file's content for the same user (its
	// client key included: write it 0600).
	Kubeconfig []byte
	// Endpoint is its "host:port".
	Endpoint string
}

var (
	once    sync.Once
	env     *envtest.Environment
	server  *Server
	failure string
	// broken: the binaries are there but the server did not start; the
	// test fails rather than skips.
	broken bool
)

// Start returns the test binary's API server, starting it on first use;
// it skips t (or fails it, with MACHINEADM_REQUIRE_ENVTEST=1) without the
// binaries, and fails t when the server does not start.
func Start(t testing.TB) *Server {
	t.Helper()
	once.Do(start)
	if server == nil {
		if broken || os.Getenv("MACHINEADM_REQUIRE_ENVTEST") == "1" {
			t.Fatal(failure)
		}
		t.Skip(failure)
	}
	return server
}

func start() {
	dir := assetsDir()
	if dir == "" {
		failure = "no kube-apiserver and etcd binaries in KUBEBUILDER_ASSETS or " + filepath.Join(cacheDir(), "bin") + " (make e2e-prepare builds them)"
		return
	}
	e := &envtest.Environment{BinaryAssetsDirectory: dir}
	// No route may be needed to find an address to advertise.
	e.ControlPlane.GetAPIServer().Configure().Set("advertise-address", "127.0.0.1").Set("endpoint-reconciler-type", "none")
	if _, err := e.Start(); err != nil {
		failure, broken = "starting kube-apiserver and etcd: "+err.Error(), true
		return
	}
	env = e
	user, err := e.AddUser(envtest.User{Name: "machineadm-test-admin", Groups: []string{"system:masters"}}, nil)
	var kubeconfig []byte
	if err == nil {
		kubeconfig, err = user.KubeConfig()
	}
	var cs kubernetes.Interface
	if err == nil {
		cs, err = kubernetes.NewForConfig(rest.CopyConfig(user.Config()))
	}
	if err != nil {
		failure, broken = "an admin user of the test API server: "+err.Error(), true
		return
	}
	u := e.ControlPlane.APIServer.SecureServing.ListenAddr
	server = &Server{Config: user.Config(), Client: cs, Kubeconfig: kubeconfig, Endpoint: net.JoinHostPort(u.Address, u.Port)}
}

// Stop stops the API server and etcd if they were started.
func Stop() {
	if env != nil {
		_ = env.Stop()
	}
}

func assetsDir() string {
	for _, d := range []string{os.Getenv("KUBEBUILDER_ASSETS"), filepath.Join(cacheDir(), "bin")} {
		if d == "" {
			continue
		}
		if isExec(filepath.Join(d, "kube-apiserver")) && isExec(filepath.Join(d, "etcd")) {
			return d
		}
	}
	return ""
}

func cacheDir() string {
	if d := os.Getenv("MACHINEADM_E2E_CACHE"); d != "" {
		return d
	}
	return "/var/cache/machineadm-e2e"
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
