package day2

import (
	"cmp"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/internal/testkubeconfig"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// unitControlPlane is a control plane whose controller manager and
// scheduler run as units (no manifests: the wait derives their addresses
// and ports from the spec, as for the Systemd runtime). Its API server
// (/livez; a static pod whose manifest gives the loopback address the
// spec's defaulting would refuse, current and Ready), controller manager
// (/healthz) and scheduler (/livez) are one real HTTPS listener on
// loopback, answering 200 while healthy(time since its start) says so and
// 503 otherwise.
func unitControlPlane(t *testing.T, healthy func(time.Duration) bool) LocalHealth {
	t.Helper()
	return unitControlPlaneScheduler(t, healthy, "")
}

// unitControlPlaneScheduler is unitControlPlane with the scheduler at
// port schedPort of loopback instead ("": the same listener).
func unitControlPlaneScheduler(t *testing.T, healthy func(time.Duration) bool, schedPort string) LocalHealth {
	t.Helper()
	return controlPlaneFixture(t, healthy, schedPort, v1.ConditionTrue)
}

// controlPlaneFixture is unitControlPlaneScheduler whose API server's
// mirror pod has the Ready condition ready.
func controlPlaneFixture(t *testing.T, healthy func(time.Duration) bool, schedPort string, ready v1.ConditionStatus) LocalHealth {
	t.Helper()
	var start time.Time
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pod := v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver-cp1", Namespace: "kube-system",
				Annotations: map[string]string{ConfigHashAnnotation: "h1", configSourceAnnotation: "file"}},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: ready}}}}
		switch r.URL.Path {
		case "/api/v1/nodes/cp1/proxy/pods":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&v1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: []v1.Pod{pod}})
			return
		case "/api/v1/namespaces/kube-system/pods/kube-apiserver-cp1":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&pod)
			return
		case "/livez", "/healthz":
		default:
			http.NotFound(w, r)
			return
		}
		if !healthy(time.Since(start)) {
			http.Error(w, "[-]etcd failed", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	start = time.Now()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	dir := t.TempDir()
	admin := filepath.Join(dir, "admin.conf")
	kc := string(testkubeconfig.Token("https://192.0.2.1:6443", ca))
	if err := os.WriteFile(admin, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	manifests := filepath.Join(dir, "manifests")
	api := v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver", Namespace: "kube-system"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:v1.37.2",
			Command: []string{"kube-apiserver", "--advertise-address=127.0.0.1", "--secure-port=" + port}}}}}
	data, err := yaml.Marshal(&api)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(manifests, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(manifests, "kube-apiserver.yaml"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	// The spec's own address is only defaulted, never dialled.
	spec := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {advertiseAddress: 192.0.2.10, bindPort: %s}
nodeRegistration: {name: cp1, criSocket: "unix:///run/containerd/containerd.sock"}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
controllerManager:
  extraArgs:
  - {name: secure-port, value: %q}
scheduler:
  extraArgs:
  - {name: secure-port, value: %q}
`, port, port, cmp.Or(schedPort, port))
	return LocalHealth{AdminKubeconfig: admin, ManifestDir: manifests, SpecInitYAML: []byte(spec)}
}

func wantUnhealthy(t *testing.T, err error) {
	t.Helper()
	var ce *errclass.Error
	if !errors.As(err, &ce) || ce.Class != errclass.ControlPlaneUnhealthy || ce.Hint == "" {
		t.Fatalf("err = %v, want class ControlPlaneUnhealthy with a hint", err)
	}
}

// TestWaitLocalControlPlaneFlapping: a control plane healthy for 600 ms
// of every 3 s (a unit in a crash loop: systemd restarts it after 5 s) is
// not healthy. One check used to be kubeadm's waiter, which retries for up
// to 10 s until the components answer: an outage shorter than that never
// failed a check, so three checks "in a row" each found a healthy moment.
// A check counts now only when every component answered at its first try.
func TestWaitLocalControlPlaneFlapping(t *testing.T) {
	t.Parallel()
	h := unitControlPlane(t, func(d time.Duration) bool { return d%(3*time.Second) < 600*time.Millisecond })
	h.Timeout = 9 * time.Second
	h.UnitStableFor = time.Nanosecond // only the checks in a row count here
	err := WaitLocalControlPlane(context.Background(), h)
	wantUnhealthy(t, err)
}

// TestWaitLocalControlPlaneUnitFailsAgain: units (no kubelet probe keeps
// them unready for their first seconds, as it does a static pod) healthy
// for 2 s that then fail for good are not healthy: three checks 500 ms
// apart fit in those 2 s, so the checks in a row must also span
// UnitStableFor (default 4 s, what three checks 2 s apart spanned).
func TestWaitLocalControlPlaneUnitFailsAgain(t *testing.T) {
	t.Parallel()
	h := unitControlPlane(t, func(d time.Duration) bool { return d < 2*time.Second })
	h.Timeout = 8 * time.Second
	err := WaitLocalControlPlane(context.Background(), h)
	wantUnhealthy(t, err)
	if !strings.Contains(err.Error(), "in a row") {
		t.Errorf("err = %v, want it to say what it waited for", err)
	}
}

// TestWaitLocalControlPlaneUnitsHealthy: units that stay healthy pass,
// once their checks in a row span UnitStableFor.
func TestWaitLocalControlPlaneUnitsHealthy(t *testing.T) {
	t.Parallel()
	h := unitControlPlane(t, func(time.Duration) bool { return true })
	h.Timeout = time.Minute
	h.UnitStableFor = 2 * time.Second
	var out strings.Builder
	h.Output = &out
	start := time.Now()
	if err := WaitLocalControlPlane(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < h.UnitStableFor {
		t.Errorf("healthy after %s, before the checks in a row spanned %s", took, h.UnitStableFor)
	}
	if !strings.Contains(out.String(), "healthy") {
		t.Errorf("output %q", out.String())
	}
}

// TestWaitLocalControlPlaneSilentComponent: a component that accepts
// connections and never answers (a stopped or deadlocked process: the
// kernel still completes the handshake) ends the wait within its bound.
// kubeadm's waiter asks the controller manager and the scheduler with an
// HTTP client without a timeout and does not stop the request at its
// own: the wait hung for ever.
func TestWaitLocalControlPlaneSilentComponent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // never read, never answered
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	h := unitControlPlaneScheduler(t, func(time.Duration) bool { return true }, port)
	// The healthy components must be seen healthy before the wait runs
	// out, for the error to name the silent one: 3 s was too little on a
	// loaded 2-core machine (the error named a healthy component).
	h.Timeout = 10 * time.Second
	done := make(chan error, 1)
	go func() { done <- WaitLocalControlPlane(context.Background(), h) }()
	select {
	case err := <-done:
		wantUnhealthy(t, err)
		if !strings.Contains(err.Error(), "kube-scheduler") {
			t.Errorf("err = %v, want it to name the component that did not answer", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("WaitLocalControlPlane with a timeout of %s did not return within a minute", h.Timeout)
	}
}

// TestWaitLocalControlPlaneAfterKubeadmUpgrade: right after kubeadm's
// control-plane phase the API server's static pod is Running on its new
// manifest but not yet Ready (kubeadm's startup probe holds it 10 s or
// more); the wait then checks health only and returns, where the whole
// wait, which needs the pod Ready, runs out its time.
func TestWaitLocalControlPlaneAfterKubeadmUpgrade(t *testing.T) {
	always := func(time.Duration) bool { return true }
	h := controlPlaneFixture(t, always, "", v1.ConditionFalse)
	h.Timeout = 3 * time.Second
	if err := WaitLocalControlPlane(context.Background(), h); err == nil {
		t.Fatal("the whole wait returned with the API server's pod not Ready")
	} else {
		wantUnhealthy(t, err)
	}
	h = controlPlaneFixture(t, always, "", v1.ConditionFalse)
	h.Timeout, h.AfterKubeadmUpgrade = time.Minute, true
	if err := WaitLocalControlPlane(context.Background(), h); err != nil {
		t.Fatalf("after kubeadm's upgrade, with every component healthy: %v", err)
	}
	// Health is still checked: a control plane that does not answer fails.
	h = controlPlaneFixture(t, func(time.Duration) bool { return false }, "", v1.ConditionFalse)
	h.Timeout, h.AfterKubeadmUpgrade = 3*time.Second, true
	wantUnhealthy(t, WaitLocalControlPlane(context.Background(), h))
}
