package day2

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// kubeletView is what a loopback API server serves about node cp1's
// static pods: the kubelet's /pods (through the node proxy) and the mirror
// pods. step runs before every answer about a mirror pod, with the number
// of mirror reads so far.
type kubeletView struct {
	mu      sync.Mutex
	kubelet map[string]string // hash by component; absent: not run
	mirror  map[string]string // hash by component; absent: no mirror pod
	ready   map[string]bool
	reads   int
	step    func(v *kubeletView, reads int)
	// forbid is how many node proxy requests are answered 403 (a
	// credential without nodes/proxy), below 0 all; proxyReads counts
	// the requests.
	forbid     int
	proxyReads int
}

func (k *kubeletView) serve(t *testing.T) kubernetes.Interface {
	t.Helper()
	pod := func(component, hash string, ready bool) v1.Pod {
		p := v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: component + "-cp1", Namespace: "kube-system",
				Annotations: map[string]string{ConfigHashAnnotation: hash, configSourceAnnotation: "file"}},
			Status: v1.PodStatus{Phase: v1.PodPending}}
		if ready {
			p.Status.Phase = v1.PodRunning
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		}
		return p
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		defer k.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/nodes/cp1/proxy/pods" && k.forbid != 0 {
			k.proxyReads++
			k.forbid--
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden,
				Message: `nodes "cp1" is forbidden: User "restricted" cannot get resource "nodes/proxy" in API group "" at the cluster scope`})
			return
		}
		if r.URL.Path == "/api/v1/nodes/cp1/proxy/pods" {
			k.proxyReads++
			l := v1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
			for c, h := range k.kubelet {
				l.Items = append(l.Items, pod(c, h, false))
			}
			// A pod of the API (not a manifest) is not a static pod.
			api := pod("kube-proxy-x", "hx", true)
			api.Annotations[configSourceAnnotation] = "api"
			l.Items = append(l.Items, api)
			_ = json.NewEncoder(w).Encode(&l)
			return
		}
		if name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/kube-system/pods/"); ok {
			k.reads++
			if k.step != nil {
				k.step(k, k.reads)
			}
			c := strings.TrimSuffix(name, "-cp1")
			if h, ok := k.mirror[c]; ok {
				p := pod(c, h, k.ready[c])
				_ = json.NewEncoder(w).Encode(&p)
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound})
	}))
	t.Cleanup(srv.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWaitStaticPodsCurrentWaitsForTheKubeletsHash: the wait ends only
// when every mirror pod carries the hash the kubelet gave its manifest and
// is Ready: not while a mirror pod has the old hash (the kubelet has not
// replaced the pod; its old container may still answer), not while the
// new pod is not Ready, not while the kubelet has not read a manifest.
func TestWaitStaticPodsCurrentWaitsForTheKubeletsHash(t *testing.T) {
	k := &kubeletView{
		kubelet: map[string]string{"etcd": "e2", "kube-apiserver": "a2"},
		mirror:  map[string]string{"etcd": "e2", "kube-apiserver": "a1"},
		ready:   map[string]bool{"etcd": true, "kube-apiserver": true},
	}
	var sawOld, sawNotReady, sawMissing bool
	k.step = func(k *kubeletView, reads int) {
		// The API server's mirror pod moves from the old hash to the
		// new one not Ready, then Ready.
		switch {
		case k.mirror["kube-apiserver"] == "a1":
			sawOld = true
			if reads >= 4 {
				k.mirror["kube-apiserver"], k.ready["kube-apiserver"] = "a2", false
			}
		case !k.ready["kube-apiserver"]:
			sawNotReady = true
			if reads >= 8 {
				k.ready["kube-apiserver"] = true
			}
		}
	}
	c := k.serve(t)
	comps := []string{"etcd", "kube-apiserver"}
	err := WaitStaticPodsCurrent(context.Background(), StaticPodsCurrent{Client: c, Node: "cp1", Components: comps, Timeout: time.Minute, Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !sawOld || !sawNotReady {
		t.Errorf("the wait ended before it saw the old hash (%v) and the new pod not Ready (%v)", sawOld, sawNotReady)
	}
	k.mu.Lock()
	if k.mirror["kube-apiserver"] != "a2" || !k.ready["kube-apiserver"] {
		t.Errorf("the wait ended with the API server's mirror pod at %s ready=%v", k.mirror["kube-apiserver"], k.ready["kube-apiserver"])
	}
	k.mu.Unlock()

	// A component whose manifest the kubelet has not read: still waiting.
	k.mu.Lock()
	k.step = func(k *kubeletView, reads int) { sawMissing = true }
	k.mu.Unlock()
	err = WaitStaticPodsCurrent(context.Background(), StaticPodsCurrent{Client: c, Node: "cp1", Components: []string{"kube-scheduler"}, Timeout: 3 * time.Second, Interval: 20 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "the kubelet runs no static pod kube-scheduler-cp1") {
		t.Errorf("a pod the kubelet does not run: err = %v", err)
	}
	if sawMissing {
		t.Errorf("the mirror pod was read although the kubelet runs no such pod")
	}
}

// TestWaitStaticPodsCurrentTimeout: a mirror pod that keeps the old hash
// fails the wait within its bounds (time and number of checks), class
// ControlPlaneUnhealthy with a hint, naming the pod and both hashes.
func TestWaitStaticPodsCurrentTimeout(t *testing.T) {
	k := &kubeletView{
		kubelet: map[string]string{"kube-apiserver": "a2"},
		mirror:  map[string]string{"kube-apiserver": "a1"},
		ready:   map[string]bool{"kube-apiserver": true},
	}
	c := k.serve(t)
	start := time.Now()
	err := WaitStaticPodsCurrent(context.Background(), StaticPodsCurrent{Client: c, Node: "cp1", Components: []string{"kube-apiserver"}, Timeout: 2 * time.Second, Interval: 100 * time.Millisecond})
	var ce *errclass.Error
	if !errors.As(err, &ce) || ce.Class != errclass.ControlPlaneUnhealthy || ce.Hint == "" {
		t.Fatalf("err = %v, want class ControlPlaneUnhealthy with a hint", err)
	}
	for _, want := range []string{"kube-apiserver-cp1 has hash a1", "the kubelet's manifest a2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	k.mu.Lock()
	reads := k.reads
	k.mu.Unlock()
	if reads > int(2*time.Second/(100*time.Millisecond))+1 {
		t.Errorf("%d checks, bounded by Timeout/Interval+1 = 21", reads)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the wait took %s with a 2 s bound", took)
	}

	// A cancelled context ends the wait with its error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = WaitStaticPodsCurrent(ctx, StaticPodsCurrent{Client: c, Node: "cp1", Components: []string{"kube-apiserver"}, Timeout: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	// No timeout is a programming error, not an endless wait.
	if err := WaitStaticPodsCurrent(context.Background(), StaticPodsCurrent{Client: c, Node: "cp1", Components: []string{"kube-apiserver"}}); err == nil {
		t.Errorf("no timeout: err = nil")
	}
}

// TestWaitStaticPodsCurrentForbidden: a credential without nodes/proxy
// never gets the kubelet's pods; a few answers in a row say so (not one:
// an API server that has just started may refuse for a moment), and the
// wait ends then with ErrNodeProxyForbidden, a hint naming the permission,
// instead of asking again until its timeout and blaming the kubelet.
func TestWaitStaticPodsCurrentForbidden(t *testing.T) {
	k := &kubeletView{forbid: -1}
	c := k.serve(t)
	err := WaitStaticPodsCurrent(context.Background(), StaticPodsCurrent{Client: c, Node: "cp1", Components: []string{"kube-apiserver"}, Timeout: 20 * time.Second, Interval: 20 * time.Millisecond, ForbiddenFor: time.Nanosecond})
	var ce *errclass.Error
	if !errors.Is(err, ErrNodeProxyForbidden) || !errors.As(err, &ce) || ce.Class != errclass.ControlPlaneUnhealthy || !strings.Contains(ce.Hint, "nodes/proxy") {
		t.Fatalf("err = %v, want ErrNodeProxyForbidden, class ControlPlaneUnhealthy, a hint naming nodes/proxy", err)
	}
	k.mu.Lock()
	n := k.proxyReads
	k.mu.Unlock()
	if n != forbiddenChecks {
		t.Errorf("%d requests to the node proxy, want %d", n, forbiddenChecks)
	}

	// Refused once, then allowed: the wait goes on and ends well.
	k = &kubeletView{forbid: 1,
		kubelet: map[string]string{"kube-apiserver": "a2"},
		mirror:  map[string]string{"kube-apiserver": "a2"},
		ready:   map[string]bool{"kube-apiserver": true},
	}
	c = k.serve(t)
	if err := WaitStaticPodsCurrent(context.Background(), StaticPodsCurrent{Client: c, Node: "cp1", Components: []string{"kube-apiserver"}, Timeout: time.Minute, Interval: 20 * time.Millisecond}); err != nil {
		t.Errorf("refused once, then allowed: %v", err)
	}
}

// TestWaitStaticPodsCurrentForbiddenWhileStarting: an API server that
// has just started refuses the node proxy until its authorizer has read
// the RBAC rules. Refusals for 2 s, checks 500 ms apart (the default),
// are not a credential without nodes/proxy: three of them in a row used
// to end the wait after 1 s, when they had been 4 s at 2 s apart.
func TestWaitStaticPodsCurrentForbiddenWhileStarting(t *testing.T) {
	k := &kubeletView{
		kubelet: map[string]string{"kube-apiserver": "a2"},
		mirror:  map[string]string{"kube-apiserver": "a2"},
		ready:   map[string]bool{"kube-apiserver": true},
		forbid:  -1,
	}
	c := k.serve(t)
	timer := time.AfterFunc(2*time.Second, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.forbid = 0
	})
	defer timer.Stop()
	if err := WaitStaticPodsCurrent(context.Background(), StaticPodsCurrent{Client: c, Node: "cp1", Components: []string{"kube-apiserver"}, Timeout: time.Minute}); err != nil {
		t.Fatalf("refused for 2 s, then allowed: %v", err)
	}

	// Refused for good: the wait ends after ForbiddenFor, not at its
	// timeout.
	k = &kubeletView{forbid: -1}
	c = k.serve(t)
	err := WaitStaticPodsCurrent(context.Background(), StaticPodsCurrent{Client: c, Node: "cp1", Components: []string{"kube-apiserver"}, Timeout: 10 * time.Minute, ForbiddenFor: 2 * time.Second})
	if !errors.Is(err, ErrNodeProxyForbidden) {
		t.Fatalf("err = %v, want ErrNodeProxyForbidden", err)
	}
}

// TestWaitStaticPodsCurrentRateLimitedAtTheEnd: a check that client-go's
// rate limiter ends at once because its wait for a request would pass the
// deadline (the limiter's "would exceed context deadline", while the
// deadline has not passed yet) is cut short by the deadline too: the
// wait's error says what the check before it saw, not the limiter's.
func TestWaitStaticPodsCurrentRateLimitedAtTheEnd(t *testing.T) {
	k := &kubeletView{
		kubelet: map[string]string{"kube-apiserver": "a2"},
		mirror:  map[string]string{"kube-apiserver": "a1"},
		ready:   map[string]bool{"kube-apiserver": true},
	}
	u := k.serve(t).CoreV1().RESTClient().Get().URL()
	// One request every 2 s: the first check's second request waits about
	// 2 s, 3 s within the 5 s timeout; the second check's second request
	// (at about 6 s) and the later checks' first ones would wait past it,
	// and the limiter refuses them at once.
	c, err := kubernetes.NewForConfig(&rest.Config{Host: u.Scheme + "://" + u.Host, QPS: 0.5, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	err = WaitStaticPodsCurrent(context.Background(), StaticPodsCurrent{Client: c, Node: "cp1", Components: []string{"kube-apiserver"}, Timeout: 5 * time.Second, Interval: 20 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver-cp1 has hash a1") {
		t.Errorf("err = %v, want what the first check saw (kube-apiserver-cp1 has hash a1)", err)
	}
}
