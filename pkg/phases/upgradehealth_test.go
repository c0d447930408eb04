package phases

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/internal/testkubeconfig"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// lateListener is a real HTTPS listener on loopback whose port is known
// at once and which starts serving (200 on every path) only when up is
// called: a control-plane component the restarted kubelet has not
// brought back yet.
type lateListener struct {
	port string
	srv  *httptest.Server
}

func newLateListener(t *testing.T) *lateListener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	ll := &lateListener{port: port}
	t.Cleanup(func() {
		if ll.srv != nil {
			ll.srv.Close()
		}
	})
	return ll
}

func (l *lateListener) up(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	ln, err := net.Listen("tcp", "127.0.0.1:"+l.port)
	if err != nil {
		t.Errorf("the late listener could not take its port back: %v", err)
		return
	}
	srv.Listener = ln
	srv.StartTLS()
	l.srv = srv
}

// staticPodHashes are the hashes of a node's static pods as a fake API
// server serves them: the kubelet's (its /pods through the node proxy)
// and the mirror pods'. Each is "h1" unless set.
// With replaceAfter > 0 the mirror pods take the kubelet's hash once
// they have been read that many times (the kubelet replaces the pods
// while someone waits for them).
type staticPodHashes struct {
	mu           sync.Mutex
	kubelet      string
	mirror       string
	replaceAfter int
	reads        int
}

func (s *staticPodHashes) get() (kubelet, mirror string) {
	if s == nil {
		return "h1", "h1"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kubelet, s.mirror
}

// readMirror counts a read of a mirror pod.
func (s *staticPodHashes) readMirror() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.replaceAfter > 0 && s.reads >= s.replaceAfter {
		s.mirror = s.kubelet
	}
}

func (s *staticPodHashes) replaced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mirror == s.kubelet
}

// fakeAPIServer stands in for the node's kube-apiserver (none runs in
// unit tests) on loopback: it serves the Node at version and Ready,
// /livez only once live is set, the kubelet's static pods (its /pods
// through the node proxy) and their mirror pods, Running and Ready, with
// the hashes of hashes (nil: the same hash everywhere).
func fakeAPIServer(t *testing.T, node, version string, live *atomic.Bool, hashes *staticPodHashes) *httptest.Server {
	t.Helper()
	components := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
	staticPod := func(component, hash string) corev1.Pod {
		return corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: component + "-" + node, Namespace: "kube-system",
				Annotations: map[string]string{"kubernetes.io/config.hash": hash, "kubernetes.io/config.source": "file"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/kube-system/pods/"); ok {
			for _, comp := range components {
				if c == comp+"-"+node {
					hashes.readMirror()
					_, mirror := hashes.get()
					p := staticPod(comp, mirror)
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(&p)
					return
				}
			}
		}
		kubelet, _ := hashes.get()
		switch r.URL.Path {
		case "/api/v1/nodes/" + node + "/proxy/pods":
			l := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
			for _, comp := range components {
				l.Items = append(l.Items, staticPod(comp, kubelet))
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&l)
		case "/livez":
			if !live.Load() {
				http.Error(w, "[-]etcd failed", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "ok")
		case "/api/v1/nodes/" + node:
			n := corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: node}}
			n.Status.NodeInfo.KubeletVersion = version
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&n)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// restartKubeletData is a control plane's Data (docs/examples'
// control-plane-init.yaml, node cp1) whose kubeconfigs point at srv and
// whose static pod manifests name the components' ports.
func restartKubeletData(t *testing.T, srv *httptest.Server, cm, sched string) *Data {
	t.Helper()
	raw, err := os.ReadFile("../../docs/examples/control-plane-init.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.Load(raw, "control-plane-init.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	_, apiPort, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := string(testkubeconfig.Token(srv.URL, ca))
	write := func(p string, data []byte) {
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/kubernetes/kubelet.conf", []byte(kc))
	write("etc/kubernetes/admin.conf", []byte(kc))
	for name, args := range map[string][]string{
		"kube-apiserver":          {"--advertise-address=127.0.0.1", "--secure-port=" + apiPort},
		"kube-controller-manager": {"--bind-address=127.0.0.1", "--secure-port=" + cm},
		"kube-scheduler":          {"--bind-address=127.0.0.1", "--secure-port=" + sched},
	} {
		pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.k8s.io/" + name + ":v1.37.2", Command: append([]string{name}, args...)}}}}
		data, err := yaml.Marshal(&pod)
		if err != nil {
			t.Fatal(err)
		}
		write("etc/kubernetes/manifests/"+name+".yaml", data)
	}
	return &Data{
		Config: l.Config, Root: root, WorkDir: t.TempDir(),
		Log: slog.New(slog.DiscardHandler), Out: io.Discard,
		Host:    &host.Env{Root: root, Services: &service.Recorder{}},
		Upgrade: &UpgradeRun{Plan: &upgrade.Plan{From: "v1.36.3", To: "v1.37.2", Steps: []upgrade.Step{{Phase: upgrade.PhaseKubelet}}}},
	}
}

// TestRestartKubeletWaitsForTheLocalControlPlane: on a control plane the
// kubelet phase succeeds only once the node's API server, controller
// manager and scheduler answer kubeadm's health checks, not as soon as
// the Node reports the new version (the restarted kubelet was still
// bringing the static pods back, and the next node's drain met "connection
// refused"). The components are real loopback listeners that come up
// seconds after the Node reports the version.
func TestRestartKubeletWaitsForTheLocalControlPlane(t *testing.T) {
	var live atomic.Bool
	srv := fakeAPIServer(t, "cp1", "v1.37.2", &live, nil)
	cm, sched := newLateListener(t), newLateListener(t)
	d := restartKubeletData(t, srv, cm.port, sched.port)
	var up atomic.Bool
	timer := time.AfterFunc(3*time.Second, func() {
		cm.up(t)
		sched.up(t)
		live.Store(true)
		up.Store(true)
	})
	defer timer.Stop()
	lines, err := kubeadmCluster{}.RestartKubelet(context.Background(), d, "cp1", "v1.37.2")
	if err != nil {
		t.Fatalf("RestartKubelet: %v (%v)", err, lines)
	}
	if !up.Load() {
		t.Fatalf("the kubelet phase succeeded before the control plane was back: %v", lines)
	}
	if got := d.Host.Services.(*service.Recorder).Calls; len(got) != 1 || got[0] != "restart kubelet.service" {
		t.Errorf("restarts %v, want kubelet.service once", got)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "control plane on this node is healthy") {
		t.Errorf("last line %q", last)
	}
}

// TestRestartKubeletControlPlaneTimeout: a control plane that never comes
// back fails the kubelet phase within the bound, class
// ControlPlaneUnhealthy with a hint.
func TestRestartKubeletControlPlaneTimeout(t *testing.T) {
	defer func(old time.Duration) { localHealthTimeout = old }(localHealthTimeout)
	localHealthTimeout = 6 * time.Second
	var live atomic.Bool
	srv := fakeAPIServer(t, "cp1", "v1.37.2", &live, nil)
	cm, sched := newLateListener(t), newLateListener(t)
	d := restartKubeletData(t, srv, cm.port, sched.port)
	start := time.Now()
	_, err := kubeadmCluster{}.RestartKubelet(context.Background(), d, "cp1", "v1.37.2")
	var ce *errclass.Error
	if !errors.As(err, &ce) || ce.Class != errclass.ControlPlaneUnhealthy || ce.Hint == "" {
		t.Fatalf("err = %v, want class ControlPlaneUnhealthy with a hint", err)
	}
	if took := time.Since(start); took > 2*time.Minute {
		t.Errorf("the wait took %s, bounded by %s", took, localHealthTimeout)
	}
}

// TestRestartKubeletWaitsForTheKubeletsNewStaticPods: after a kubelet
// upgrade the new kubelet gives the unchanged manifests new hashes and
// replaces every static pod some seconds after the Node reports Ready,
// while the old containers still answer the health checks. The kubelet
// phase must wait until the mirror pods carry the kubelet's hashes (the
// control plane was found restarting 16-18 s after machineadm upgrade
// had exited). Here every component answers at once; the mirror pods
// take the kubelet's hash only after some checks.
func TestRestartKubeletWaitsForTheKubeletsNewStaticPods(t *testing.T) {
	var live atomic.Bool
	live.Store(true)
	hashes := &staticPodHashes{kubelet: "h2", mirror: "h1", replaceAfter: 6}
	srv := fakeAPIServer(t, "cp1", "v1.37.2", &live, hashes)
	cm, sched := newLateListener(t), newLateListener(t)
	cm.up(t)
	sched.up(t)
	d := restartKubeletData(t, srv, cm.port, sched.port)
	lines, err := kubeadmCluster{}.RestartKubelet(context.Background(), d, "cp1", "v1.37.2")
	if err != nil {
		t.Fatalf("RestartKubelet: %v (%v)", err, lines)
	}
	if !hashes.replaced() {
		t.Fatalf("the kubelet phase succeeded while the mirror pods still had the old hash: %v", lines)
	}
}

// TestRestartKubeletStaticPodsNeverReplaced: a kubelet that never runs
// its manifests' pods fails the kubelet phase within the bound, class
// ControlPlaneUnhealthy, naming the pods and both hashes.
func TestRestartKubeletStaticPodsNeverReplaced(t *testing.T) {
	defer func(old time.Duration) { localHealthTimeout = old }(localHealthTimeout)
	localHealthTimeout = 6 * time.Second
	var live atomic.Bool
	live.Store(true)
	srv := fakeAPIServer(t, "cp1", "v1.37.2", &live, &staticPodHashes{kubelet: "h2", mirror: "h1"})
	cm, sched := newLateListener(t), newLateListener(t)
	cm.up(t)
	sched.up(t)
	d := restartKubeletData(t, srv, cm.port, sched.port)
	_, err := kubeadmCluster{}.RestartKubelet(context.Background(), d, "cp1", "v1.37.2")
	var ce *errclass.Error
	if !errors.As(err, &ce) || ce.Class != errclass.ControlPlaneUnhealthy || ce.Hint == "" {
		t.Fatalf("err = %v, want class ControlPlaneUnhealthy with a hint", err)
	}
	for _, want := range []string{"kube-apiserver-cp1 has hash h1", "h2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
}

// TestKubeadmControlPlaneWaitWholeUnlessTheKubeletPhaseFollows: after
// kubeadm's control-plane phase only health is checked when the kubelet
// phase, whose wait covers the static pods' hashes and Ready, follows in
// the same run. Not when --skip-phases leaves it out (nothing else would
// wait for the pods), and not when the run resumes at kubeadm's
// control-plane phase: kubeadm then finds the manifests it had moved in
// before the crash equal to its new ones and skips them without waiting
// for the kubelet to run them, so the old containers may still answer
// the health checks. Here the kubelet never runs the manifests' pods
// (the mirror pods keep the old hash) while every component answers:
// the whole wait fails, the health-only one passes. kubeadm's upgrade
// cannot run here; fakeKubeadmUpgrade stands in for it.
func TestKubeadmControlPlaneWaitWholeUnlessTheKubeletPhaseFollows(t *testing.T) {
	defer func(old time.Duration) { localHealthTimeout = old }(localHealthTimeout)
	localHealthTimeout = 4 * time.Second
	var ran []string
	defer func(old func(context.Context, *Data, string, string) error) { kubeadmUpgrade = old }(kubeadmUpgrade)
	kubeadmUpgrade = func(_ context.Context, _ *Data, verb, name string) error { // fakeKubeadmUpgrade
		ran = append(ran, verb+" "+name)
		return nil
	}
	var live atomic.Bool
	live.Store(true)
	srv := fakeAPIServer(t, "cp1", "v1.37.2", &live, &staticPodHashes{kubelet: "h2", mirror: "h1"})
	cm, sched := newLateListener(t), newLateListener(t)
	cm.up(t)
	sched.up(t)
	leaf := upgrade.PhaseKubeadm + "/control-plane"
	if names := Upgrade(restartKubeletData(t, srv, cm.port, sched.port).Config).Names(); !slices.Contains(names, leaf) || !slices.Contains(names, upgrade.PhaseKubelet) {
		t.Fatalf("the upgrade workflow has no leaf %s or %s: %v", leaf, upgrade.PhaseKubelet, names)
	}
	for _, tc := range []struct {
		name      string
		skip      []string
		resumedAt string
		only      string
		whole     bool
	}{
		{name: "the kubelet phase follows"},
		{name: "a resumed run that starts after kubeadm's control plane", resumedAt: upgrade.PhaseKubeadm + "/kubeconfig"},
		{name: "--skip-phases kubelet", skip: []string{upgrade.PhaseKubelet}, whole: true},
		{name: "resumed at kubeadm's control-plane phase", resumedAt: leaf, whole: true},
		{name: "a run of that phase alone", only: leaf, whole: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := restartKubeletData(t, srv, cm.port, sched.port)
			d.Upgrade.Plan.Steps = []upgrade.Step{{Phase: upgrade.PhaseKubeadm}, {Phase: upgrade.PhaseKubelet}}
			d.opts.Skip, d.opts.Only, d.resumedAt = tc.skip, tc.only, tc.resumedAt
			ran = nil
			err := kubeadmCluster{}.KubeadmPhase(context.Background(), d, "control-plane")
			if len(ran) != 1 || ran[0] != "apply control-plane" {
				t.Fatalf("kubeadm ran %v, want its apply control-plane phase once", ran)
			}
			if !tc.whole {
				if err != nil {
					t.Fatalf("health only: %v", err)
				}
				return
			}
			var ce *errclass.Error
			if !errors.As(err, &ce) || ce.Class != errclass.ControlPlaneUnhealthy || !strings.Contains(err.Error(), "kube-apiserver-cp1 has hash h1") {
				t.Fatalf("err = %v, want the whole wait's ControlPlaneUnhealthy naming the mirror pod's old hash", err)
			}
		})
	}
}

// TestRestartForCertificatesResumedWaitsWhereARestartMayHaveRun: a run
// that resumes at certs-renew waits for the control plane's health after
// a component certs-renew restarts (the controller manager, the
// scheduler: a killed run may have swapped its manifest in), but not
// after etcd or the API server, which certs-renew never restarts: on a
// control plane that is not healthy yet, those change nothing and fail
// nothing, and the controller manager's wait fails ControlPlaneUnhealthy
// within the bound.
func TestRestartForCertificatesResumedWaitsWhereARestartMayHaveRun(t *testing.T) {
	defer func(old time.Duration) { localHealthTimeout = old }(localHealthTimeout)
	localHealthTimeout = 3 * time.Second
	var live atomic.Bool
	srv := fakeAPIServer(t, "cp1", "v1.37.2", &live, nil)
	cm, sched := newLateListener(t), newLateListener(t)
	d := restartKubeletData(t, srv, cm.port, sched.port)
	d.resumedAt = upgrade.PhaseCerts
	for _, c := range []string{upgrade.ComponentEtcd, upgrade.ComponentAPIServer} {
		res, err := kubeadmCluster{}.RestartForCertificates(context.Background(), d, c, false)
		if err != nil || res.Changed || len(res.Changes) != 0 {
			t.Errorf("%s, resumed: %+v, %v; want nothing waited for", c, res, err)
		}
	}
	start := time.Now()
	_, err := kubeadmCluster{}.RestartForCertificates(context.Background(), d, upgrade.ComponentControllerManager, false)
	var ce *errclass.Error
	if !errors.As(err, &ce) || ce.Class != errclass.ControlPlaneUnhealthy {
		t.Errorf("the controller manager, resumed, on an unhealthy control plane: %v; want the wait's ControlPlaneUnhealthy", err)
	}
	if took := time.Since(start); took > 2*time.Minute {
		t.Errorf("the wait took %s, bounded by %s", took, localHealthTimeout)
	}
}
