//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// managementCluster is the Cluster API e2e's management cluster: a real
// kube-apiserver and etcd (the binaries `make e2e-prepare` builds) run
// envtest-style on 127.0.0.1 inside the harness's network namespace, with
// Cluster API's core CRDs and webhooks, machineadm's CRDs and the test
// infrastructure provider's CRDs installed, and three sets of controllers:
// Cluster API's own core manager (built by components.sh from
// sigs.k8s.io/cluster-api, module hack/e2e/tools/capi),
// machineadm-controller (bin/machineadm-controller) — both as processes —
// and the nspawn test infrastructure provider (capi_infra.go), in the
// test binary.
type managementCluster struct {
	env        *envtest.Environment
	cfg        *rest.Config
	c          client.Client
	kubeconfig string // path of an admin kubeconfig (0600)
	dir        string // logs and kubeconfig
	procs      []*managedProcess
}

// managedProcess is a controller process with its log file.
type managedProcess struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// Bounds of the management cluster's start and stop.
const (
	webhookReadyTimeout = 90 * time.Second
	processStopTimeout  = 20 * time.Second
	// capiReportAddr is machineadm-controller's report receiver.
	capiReportAddr = bridgeIP + ":9445"
)

// managementScheme knows the core, Cluster API core and machineadm
// bootstrap types.
func managementScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1.AddToScheme, bootstrapv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// controllerBinary is machineadm-controller (make build-controller).
func (e *env) controllerBinary() string {
	return getenv("MACHINEADM_CONTROLLER_BIN", filepath.Join(e.repo, "bin/machineadm-controller"))
}

// startManagementCluster starts the API server, installs the CRDs and
// webhook configurations, and starts Cluster API's core manager and
// machineadm-controller. Everything is stopped when the test ends.
func (e *env) startManagementCluster(ctx context.Context, t *testing.T) *managementCluster {
	t.Helper()
	for _, p := range []string{e.binPath("capi-manager"), filepath.Join(e.cache, "capi/crd"), e.controllerBinary()} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("missing %s: run `make build-controller` and `make e2e-prepare` first", p)
		}
	}
	mc := &managementCluster{dir: filepath.Join(e.runDir, "capi-management")}
	if err := os.MkdirAll(mc.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	scheme, err := managementScheme()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	mc.env = &envtest.Environment{
		BinaryAssetsDirectory: filepath.Join(e.cache, "bin"),
		CRDDirectoryPaths: []string{
			filepath.Join(e.cache, "capi/crd"),
			filepath.Join(e.repo, "contrib/cluster-api/crd"),
			filepath.Join(e.repo, "test/e2e/testdata/capi"),
		},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths:            []string{filepath.Join(e.cache, "capi/webhook")},
			LocalServingHost: "127.0.0.1",
		},
	}
	// The harness's namespace has no default route, from which
	// kube-apiserver would otherwise pick its advertised address (it exits
	// "Unable to find suitable network address"). It advertises 127.0.0.1,
	// which the endpoint reconciler refuses (loopback), so that is off: no
	// client here uses the kubernetes Service. Its and etcd's output go to
	// dir/kube-apiserver.log and dir/etcd.log.
	api := mc.env.ControlPlane.GetAPIServer()
	api.Configure().Set("advertise-address", "127.0.0.1").Set("endpoint-reconciler-type", "none")
	etcd := &envtest.Etcd{}
	mc.env.ControlPlane.Etcd = etcd
	for _, x := range []struct {
		name     string
		out, err *io.Writer
	}{{"kube-apiserver", &api.Out, &api.Err}, {"etcd", &etcd.Out, &etcd.Err}} {
		f, err := os.OpenFile(filepath.Join(mc.dir, x.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		*x.out, *x.err = f, f
	}
	mc.cfg, err = mc.env.Start()
	if err != nil {
		b, _ := os.ReadFile(filepath.Join(mc.dir, "kube-apiserver.log"))
		t.Fatalf("management cluster: %v\nkube-apiserver log (last 20 lines):\n%s", err, tail(string(b), 20))
	}
	t.Cleanup(func() {
		mc.stopProcesses(t)
		if err := mc.env.Stop(); err != nil {
			t.Errorf("stop the management cluster: %v", err)
		}
	})
	mc.c, err = client.New(mc.cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	user, err := mc.env.AddUser(envtest.User{Name: "capi-e2e-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	mc.kubeconfig = filepath.Join(mc.dir, "kubeconfig")
	if err := os.WriteFile(mc.kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	timing(t, "capi-management-apiserver-up", time.Since(start))

	wh := mc.env.WebhookInstallOptions
	// Cluster API's core manager. Its webhooks (defaulting and validation
	// of Clusters, Machines, MachineSets, MachineDeployments) are
	// registered with the API server by envtest above and served here; no
	// leader election, metrics and health endpoints off, and the CRD
	// migrator skipped (the CRDs were installed fresh at their storage
	// version).
	mc.start(t, "capi-manager", e.binPath("capi-manager"),
		"--leader-elect=false",
		"--diagnostics-address=0",
		"--health-addr=0",
		"--webhook-port="+strconv.Itoa(wh.LocalServingPort),
		"--webhook-cert-dir="+wh.LocalServingCertDir,
		"--skip-crd-migration-phases=StorageVersionMigration,CleanupManagedFields",
		"--v=2")
	mc.start(t, "machineadm-controller", e.controllerBinary(),
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		// The report receiver on the bridge address: machines that fail
		// before they have a Node post their outcome there.
		"--report-bind-address="+capiReportAddr,
		"--report-url=http://"+capiReportAddr)
	if err := waitTLS(ctx, net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort)), webhookReadyTimeout); err != nil {
		mc.dumpLogs(t)
		t.Fatalf("Cluster API's webhooks: %v", err)
	}
	timing(t, "capi-management-controllers-up", time.Since(start))
	return mc
}

// start runs one controller against the management cluster, its output in
// dir/NAME.log.
func (mc *managementCluster) start(t *testing.T, name, bin string, args ...string) {
	t.Helper()
	logPath := filepath.Join(mc.dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+mc.kubeconfig)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &managedProcess{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	mc.procs = append(mc.procs, p)
}

// exited names the controllers that have stopped (they never should while
// the test runs).
func (mc *managementCluster) exited() []string {
	var out []string
	for _, p := range mc.procs {
		select {
		case <-p.done:
			out = append(out, fmt.Sprintf("%s (exit %d)", p.name, p.cmd.ProcessState.ExitCode()))
		default:
		}
	}
	return out
}

// stopProcesses stops the controllers: SIGTERM, then SIGKILL after
// processStopTimeout.
func (mc *managementCluster) stopProcesses(t *testing.T) {
	for _, p := range mc.procs {
		select {
		case <-p.done:
			continue
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(processStopTimeout):
			t.Logf("%s: no exit %s after SIGTERM, killing", p.name, processStopTimeout)
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
}

// dumpLogs logs the last lines of every controller's log.
func (mc *managementCluster) dumpLogs(t *testing.T) {
	t.Helper()
	for _, p := range mc.procs {
		b, _ := os.ReadFile(p.log)
		t.Logf("%s log (last 40 lines of %s):\n%s", p.name, p.log, tail(string(b), 40))
	}
}

// waitTLS waits until a TLS server answers a handshake at addr.
func waitTLS(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: &tls.Config{InsecureSkipVerify: true}} // #nosec G402 -- readiness only, nothing is sent
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("no TLS server at %s within %s: %w", addr, timeout, errors.Join(last))
}

// logTail is the last n lines of a controller log, for failure messages.
func (mc *managementCluster) logTail(name string, n int) string {
	b, _ := os.ReadFile(filepath.Join(mc.dir, name+".log"))
	return strings.TrimSpace(tail(string(b), n))
}
