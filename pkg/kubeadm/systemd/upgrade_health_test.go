package systemd

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"

	"github.com/machineadm/machineadm/internal/testkubeconfig"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/cpcheck"
)

// healthFixture is a Systemd control plane at v1.36.3 in a temporary
// root, about to be upgraded to v1.37.2, whose components' health
// endpoints are loopback servers: one HTTPS listener for the API server
// (/livez, /version through admin.conf), the controller manager
// (/healthz) and the scheduler (/livez), and one HTTP listener for etcd's
// /readyz. Each answers 200 while healthy(component, new, d) says so and
// 503 otherwise, where new says whether the component's installed unit
// runs the v1.37.2 binary and d is the time since its last restart.
type healthFixture struct {
	u    *SystemdUpgrade
	s    *SystemdControlPlane
	rec  *service.Recorder
	out  *strings.Builder
	root string

	mu       sync.Mutex
	restarts map[string]time.Time
}

func newHealthFixture(t *testing.T, healthy func(component string, new bool, d time.Duration) bool) *healthFixture {
	t.Helper()
	cfg, docs, _ := systemdInit(t)
	f := &healthFixture{root: t.TempDir(), out: &strings.Builder{}, restarts: map[string]time.Time{}}
	versioned(t, cfg, f.root, "v1.36.3")
	f.rec = &service.Recorder{OnRestart: func(unit string) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.restarts[strings.TrimSuffix(unit, ".service")] = time.Now()
		return nil
	}}
	kubeconfigs := t.TempDir()
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: f.root, Services: f.rec, KubeconfigDir: kubeconfigs, Out: f.out, Timeout: 7 * time.Second}
	f.u = &SystemdUpgrade{Env: env}
	_, old, err := f.u.components()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.Install(t.Context(), f.root, old, &service.Recorder{}, false, nil); err != nil {
		t.Fatal(err)
	}
	versioned(t, cfg, f.root, "v1.37.2")
	if f.s, _, err = f.u.components(); err != nil {
		t.Fatal(err)
	}

	answer := func(component string, w http.ResponseWriter) {
		if !healthy(component, f.installedNew(t, component), f.sinceRestart(component)) {
			http.Error(w, "[-]poststarthook failed", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}
	// kubeadm's waiter asks the API server for /livez, the controller
	// manager for /healthz and the scheduler for /livez: the ports tell
	// the API server's and the scheduler's apart.
	var apiPort string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(r.Host)
		switch {
		case r.URL.Path == "/version":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
		case r.URL.Path == "/healthz":
			answer("kube-controller-manager", w)
		case r.URL.Path == "/livez" && port == apiPort:
			answer("kube-apiserver", w)
		case r.URL.Path == "/livez":
			answer("kube-scheduler", w)
		default:
			http.NotFound(w, r)
		}
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, apiPort, _ = net.SplitHostPort(srv.Listener.Addr().String())
	// The scheduler on a second listener with the same handler.
	sched := httptest.NewUnstartedServer(srv.Config.Handler)
	sched.StartTLS()
	t.Cleanup(sched.Close)
	_, schedPort, _ := net.SplitHostPort(sched.Listener.Addr().String())
	etcd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		answer("etcd", w)
	}))
	t.Cleanup(etcd.Close)

	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := string(testkubeconfig.Token("https://192.0.2.1:6443", ca))
	if err := os.WriteFile(filepath.Join(kubeconfigs, "admin.conf"), []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	// The derivation's endpoints point at the servers. kubeadm's
	// defaulting replaces a loopback advertise address, so they are set
	// on the loaded configuration, after the units were derived.
	port, _ := strconv.Atoi(apiPort)
	c := f.s.cfg
	c.LocalAPIEndpoint.AdvertiseAddress, c.LocalAPIEndpoint.BindPort = "127.0.0.1", int32(port)
	c.ControllerManager.ExtraArgs = append(c.ControllerManager.ExtraArgs, kubeadmapi.Arg{Name: "secure-port", Value: apiPort})
	c.Scheduler.ExtraArgs = append(c.Scheduler.ExtraArgs, kubeadmapi.Arg{Name: "secure-port", Value: schedPort})
	c.Etcd.Local.ExtraArgs = append(c.Etcd.Local.ExtraArgs, kubeadmapi.Arg{Name: "listen-metrics-urls", Value: etcd.URL})
	return f
}

// installedNew says whether component's installed unit runs the new
// binary.
func (f *healthFixture) installedNew(t *testing.T, component string) bool {
	unit, err := os.ReadFile(filepath.Join(f.root, cpunits.UnitDir, component+".service"))
	if err != nil {
		t.Error(err)
		return false
	}
	return strings.HasSuffix(cpunits.ExecBinary(unit), "-v1.37.2")
}

func (f *healthFixture) sinceRestart(component string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.restarts[component]
	if !ok {
		return time.Hour // not restarted: running for a long time
	}
	return time.Since(r)
}

// replace upgrades component's unit as Component does, with the
// fixture's endpoints.
func (f *healthFixture) replace(t *testing.T, component string) (cpunits.ReplaceResult, error) {
	t.Helper()
	_, comps, err := f.u.components()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range comps {
		if c.Name == component {
			return f.u.replace(t.Context(), f.s, c)
		}
	}
	t.Fatalf("no component %s", component)
	return cpunits.ReplaceResult{}, nil
}

// A controller manager, scheduler or etcd whose new unit answers its
// health checks for 2 s after its restart and then fails (its new flags
// make it exit; systemd restarts it) is not healthy: it is rolled back,
// and the old unit, which stays healthy, is back. The wait used to be one
// kubeadm waiter (or etcd poll) that returned at the first healthy
// answer.
func TestSystemdUpgradeUnitFailsAfterAnswering(t *testing.T) {
	for _, component := range []string{"kube-controller-manager", "kube-scheduler", "etcd"} {
		t.Run(component, func(t *testing.T) {
			t.Parallel()
			f := newHealthFixture(t, func(c string, new bool, d time.Duration) bool {
				return c != component || !new || d < 2*time.Second
			})
			r, err := f.replace(t, component)
			if err == nil || !r.RolledBack || !strings.Contains(err.Error(), "rolled back") {
				t.Fatalf("%+v, %v; want a rollback", r, err)
			}
			if f.installedNew(t, component) {
				t.Error("the new unit is still installed after the rollback")
			}
			if !strings.Contains(err.Error(), "healthy checks in a row spanned") {
				t.Errorf("err = %v, want it to say how far the checks in a row got", err)
			}
		})
	}
}

// Units that stay healthy pass, once their checks in a row span
// cpcheck.UnitStableFor; the API server also reports the new version.
func TestSystemdUpgradeUnitStaysHealthy(t *testing.T) {
	for _, component := range []string{"etcd", "kube-apiserver", "kube-scheduler"} {
		t.Run(component, func(t *testing.T) {
			t.Parallel()
			f := newHealthFixture(t, func(string, bool, time.Duration) bool { return true })
			start := time.Now()
			r, err := f.replace(t, component)
			if err != nil || !r.Changed || r.RolledBack {
				t.Fatalf("%+v, %v\n%s", r, err, f.out)
			}
			if took := time.Since(start); took < cpcheck.UnitStableFor {
				t.Errorf("healthy after %s, before the checks in a row spanned %s", took, cpcheck.UnitStableFor)
			}
			if !f.installedNew(t, component) {
				t.Error("the new unit is not installed")
			}
			if !strings.Contains(f.out.String(), component+" healthy") {
				t.Errorf("output:\n%s", f.out)
			}
		})
	}
}

// unitRunsFake is a service manager that records like service.Recorder
// and says, as systemd's UnitRun does, how often it restarted each unit:
// it fakes systemd, which does not run here. A unit whose installed unit
// file runs a binary named in restarting is restarted by "systemd" each
// time it is asked.
type unitRunsFake struct {
	*service.Recorder
	root       string
	restarting string
	mu         sync.Mutex
	n          uint32
}

func (m *unitRunsFake) UnitRun(_ context.Context, unit string) (service.UnitRun, error) {
	content, err := os.ReadFile(filepath.Join(m.root, cpunits.UnitDir, unit))
	if err != nil {
		return service.UnitRun{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if strings.Contains(cpunits.ExecBinary(content), m.restarting) {
		m.n++
	}
	return service.UnitRun{ActiveState: "active", Restarts: m.n, ActiveSince: uint64(m.n) * 1000}, nil
}

// A unit whose health endpoints answer throughout, but which systemd
// says it restarted after the upgrade's restart (its process exited in
// between the checks), is not healthy and is rolled back.
func TestSystemdUpgradeUnitRestartedBySystemd(t *testing.T) {
	t.Parallel()
	f := newHealthFixture(t, func(string, bool, time.Duration) bool { return true })
	f.u.Env.Services = &unitRunsFake{Recorder: f.rec, root: f.root, restarting: "kube-scheduler-v1.37.2"}
	r, err := f.replace(t, "kube-scheduler")
	if err == nil || !r.RolledBack {
		t.Fatalf("%+v, %v; want a rollback", r, err)
	}
	if !strings.Contains(err.Error(), "NRestarts") {
		t.Errorf("err = %v, want it to say systemd restarted the unit", err)
	}
}

// An API server whose /livez answers healthy but slowly (600 ms, past
// kubeadm's 500 ms retry interval: a loaded machine, or etcd slow behind
// the etcd check /livez makes, which waits up to 2 s), while systemd says
// its process stayed, is healthy and kept. Every slow check used to start
// the run again, so the wait timed out and the healthy API server was
// rolled back.
func TestSystemdUpgradeSlowButHealthyAPIServer(t *testing.T) {
	t.Parallel()
	f := newHealthFixture(t, func(c string, _ bool, _ time.Duration) bool {
		if c == "kube-apiserver" {
			time.Sleep(600 * time.Millisecond)
		}
		return true
	})
	f.u.Env.Services = &unitRunsFake{Recorder: f.rec, root: f.root, restarting: "no-such-binary"}
	// Room for a loaded machine: the run takes about 5 s of checks 1.1 s
	// apart.
	f.u.Env.Timeout = 20 * time.Second
	r, err := f.replace(t, "kube-apiserver")
	if err != nil || !r.Changed || r.RolledBack {
		t.Fatalf("%+v, %v; want the slow but healthy API server kept\n%s", r, err, f.out)
	}
}
