package nodeannotation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machineadm/machineadm/pkg/report"
)

// fakeAPIServer is an httptest TLS server on loopback standing in for the
// API server's Node endpoints the writer uses: the PATCH of Node w1 and
// the list and watch of the nodes with a field selector, answered with
// client-go's own types (Node, NodeList, Status, WatchEvent). Node w1 is
// missing (404) until it registers; the fields below script the rest.
// Set them before the first request.
type fakeAPIServer struct {
	*httptest.Server

	// patchStatus answers the first PATCHes with these codes, whatever
	// the Node's state.
	patchStatus []int
	// listStatus, watchStatus: non-zero answers every list, every watch
	// with that code.
	listStatus, watchStatus int
	// watchEnd ends the first watchEnd watches without an event (a server
	// timeout); watchExpire sends the first watchExpire watches a 410
	// Expired ERROR event.
	watchEnd, watchExpire int
	// The Node registers when a watch opens (registerOnWatch), or when
	// this many PATCHes were answered 404 (registerAfter404s, 0: never
	// that way), or before the list with this number (registerOnList, 1
	// for the first; 0: never that way).
	registerOnWatch   bool
	registerAfter404s int
	registerOnList    int

	mu         sync.Mutex
	reqs       []request
	registered bool
	reg        chan struct{} // closed when the Node registers
	patches    int
	notFound   int
	lists      int
	watches    int
}

func newFakeAPIServer(t *testing.T, f *fakeAPIServer) *fakeAPIServer {
	f.reg = make(chan struct{})
	f.Server = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Server.Close)
	return f
}

// registerLocked makes Node w1 exist; f.mu is held.
func (f *fakeAPIServer) registerLocked() {
	if !f.registered {
		f.registered = true
		close(f.reg)
	}
}

func (f *fakeAPIServer) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// kinds is the requests as "patch", "list" and "watch", in order.
func (f *fakeAPIServer) kinds() []string {
	var k []string
	for _, r := range f.requests() {
		switch {
		case r.Method == http.MethodPatch:
			k = append(k, "patch")
		case strings.Contains(r.Query, "watch=true"):
			k = append(k, "watch")
		default:
			k = append(k, "list")
		}
	}
	return k
}

func node() *corev1.Node {
	return &corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "w1", ResourceVersion: "6"}}
}

func status(code int) *metav1.Status {
	reason := map[int]metav1.StatusReason{404: metav1.StatusReasonNotFound, 403: metav1.StatusReasonForbidden,
		410: metav1.StatusReasonExpired, 500: metav1.StatusReasonInternalError}[code]
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Reason: reason, Code: int32(code), Message: "fake API server: " + string(reason),
		Details: &metav1.StatusDetails{Name: "w1", Kind: "nodes"}}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), body})
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPatch && r.URL.Path == "/api/v1/nodes/w1":
		f.patches++
		code := 0
		if f.patches <= len(f.patchStatus) {
			code = f.patchStatus[f.patches-1]
		} else if !f.registered {
			code = http.StatusNotFound
		}
		if code == http.StatusNotFound {
			f.notFound++
			if f.registerAfter404s > 0 && f.notFound >= f.registerAfter404s {
				f.registerLocked()
			}
		}
		f.mu.Unlock()
		if code != 0 {
			writeJSON(w, code, status(code))
			return
		}
		writeJSON(w, http.StatusOK, node())
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes" && q.Get("fieldSelector") == "metadata.name=w1" && q.Get("watch") != "true":
		f.lists++
		if f.registerOnList > 0 && f.lists >= f.registerOnList {
			f.registerLocked()
		}
		list := &corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "5"}}
		if f.registered {
			list.Items = []corev1.Node{*node()}
		}
		code := f.listStatus
		f.mu.Unlock()
		if code != 0 {
			writeJSON(w, code, status(code))
			return
		}
		writeJSON(w, http.StatusOK, list)
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes" && q.Get("fieldSelector") == "metadata.name=w1" && q.Get("watch") == "true":
		f.watches++
		n, code, reg := f.watches, f.watchStatus, f.reg
		if f.registerOnWatch && n > f.watchEnd+f.watchExpire {
			f.registerLocked()
		}
		f.mu.Unlock()
		if code != 0 {
			writeJSON(w, code, status(code))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		switch {
		case n <= f.watchEnd:
			return
		case n <= f.watchEnd+f.watchExpire:
			ev := metav1.WatchEvent{Type: "ERROR"}
			ev.Object.Raw, _ = json.Marshal(status(http.StatusGone))
			_ = json.NewEncoder(w).Encode(ev)
			return
		}
		select {
		case <-reg:
			ev := metav1.WatchEvent{Type: "ADDED"}
			ev.Object.Raw, _ = json.Marshal(node())
			_ = json.NewEncoder(w).Encode(ev)
			w.(http.Flusher).Flush()
			<-r.Context().Done() // a watch stays open until the client stops it
		case <-r.Context().Done():
		}
	default:
		f.mu.Unlock()
		writeJSON(w, http.StatusNotFound, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 404, Message: "fake API server: no such endpoint " + r.Method + " " + r.URL.String()})
	}
}

// debugLog is a logger into a buffer, at debug level.
func debugLog() (*slog.Logger, *syncBuffer) {
	b := &syncBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// writerFor is a Writer with a kubelet-like kubeconfig for f.
func writerFor(t *testing.T, f *fakeAPIServer, retry report.RetryPolicy) *Writer {
	root := t.TempDir()
	kubeconfig(t, root, f.Server)
	return &Writer{Root: root, Retry: retry}
}

const wantBody = `{"metadata":{"annotations":{"machineadm.io/bootstrap-report":"{\"result\":\"Succeeded\",\"command\":\"bootstrap\",\"action\":\"Join\",\"endTime\":\"2026-03-14T09:01:23Z\",\"durationMs\":83000,\"phases\":7,\"machineadmVersion\":\"v0.1.0\"}"}}}`

// A Node already there is patched with one request, the kubelet's
// credentials and the report's summary.
func TestWriterPatchesNode(t *testing.T) {
	f := newFakeAPIServer(t, &fakeAPIServer{})
	f.mu.Lock()
	f.registerLocked()
	f.mu.Unlock()
	if err := writerFor(t, f, report.RetryPolicy{Attempts: 1}).Write(t.Context(), succeeded()); err != nil {
		t.Fatal(err)
	}
	got := f.requests()
	if len(got) != 1 {
		t.Fatalf("want one PATCH, got %v", f.kinds())
	}
	r := got[0]
	if r.Method != http.MethodPatch || r.Path != "/api/v1/nodes/w1" || r.Query != "fieldManager=machineadm" ||
		r.ContentType != "application/merge-patch+json" || r.Auth != "Bearer node-credential" || string(r.Body) != wantBody {
		t.Errorf("request:\n%s %s?%s\nContent-Type: %s\nAuthorization: %s\n%s\nwant body\n%s", r.Method, r.Path, r.Query, r.ContentType, r.Auth, r.Body, wantBody)
	}
}

// A Node that registers after the first patch is watched for, within the
// same attempt, and patched when the watch shows it: the list and the
// watch ask for that one Node, the watch from the list's version.
func TestWriterWatchesForRegistration(t *testing.T) {
	f := newFakeAPIServer(t, &fakeAPIServer{registerOnWatch: true})
	w := writerFor(t, f, report.RetryPolicy{Attempts: 1, Backoff: time.Hour})
	log, buf := debugLog()
	w.Log = log
	if err := w.Write(t.Context(), succeeded()); err != nil {
		t.Fatalf("one attempt watching for the Node: %v", err)
	}
	if got := strings.Join(f.kinds(), " "); got != "patch list watch patch" {
		t.Fatalf("requests %q, want a 404 patch, a list, a watch and the patch", got)
	}
	reqs := f.requests()
	list, _ := url.ParseQuery(reqs[1].Query)
	watch, _ := url.ParseQuery(reqs[2].Query)
	if list.Get("fieldSelector") != "metadata.name=w1" || watch.Get("fieldSelector") != "metadata.name=w1" ||
		watch.Get("resourceVersion") != "5" || reqs[2].Auth != "Bearer node-credential" {
		t.Errorf("list %q, watch %q: want the field selector metadata.name=w1 and the watch from the list's resourceVersion 5, with the kubelet's credential", reqs[1].Query, reqs[2].Query)
	}
	if string(reqs[3].Body) != wantBody {
		t.Errorf("patch body %s, want %s", reqs[3].Body, wantBody)
	}
	if s := buf.String(); !strings.Contains(s, "waited for the Node to register") || !strings.Contains(s, "by=watch") {
		t.Errorf("debug log %q: want the wait, by watch", s)
	}
}

// A Node that registered between the 404 and the list is patched at once,
// without a watch.
func TestWriterRegisteredBeforeTheList(t *testing.T) {
	f := newFakeAPIServer(t, &fakeAPIServer{registerOnList: 1})
	if err := writerFor(t, f, report.RetryPolicy{Attempts: 1}).Write(t.Context(), succeeded()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.kinds(), " "); got != "patch list patch" {
		t.Errorf("requests %q, want patch list patch", got)
	}
}

// A watch the server ends, or whose resource version expired (410), is
// opened again from a new list.
func TestWriterWatchesAgain(t *testing.T) {
	f := newFakeAPIServer(t, &fakeAPIServer{watchEnd: 1, watchExpire: 1, registerOnWatch: true})
	if err := writerFor(t, f, report.RetryPolicy{Attempts: 1}).Write(t.Context(), succeeded()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.kinds(), " "); got != "patch list watch list watch list watch patch" {
		t.Errorf("requests %q, want a list and a watch again after the ended and the expired watch", got)
	}
}

// A Node that never registers: each attempt's wait is bounded by
// RegistrationTimeout, the attempts by Retry, and the error is the
// Node's 404 (retryable, not permanent) after the attempts ran out.
func TestWriterNodeNeverRegisters(t *testing.T) {
	f := newFakeAPIServer(t, &fakeAPIServer{})
	w := writerFor(t, f, report.RetryPolicy{Attempts: 2, Backoff: time.Millisecond, Total: time.Minute})
	w.RegistrationTimeout = 100 * time.Millisecond
	log, buf := debugLog()
	w.Log = log
	start := time.Now()
	err := w.Write(t.Context(), succeeded())
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "gave up after 2 attempt(s)") {
		t.Fatalf("want the Node's 404 after 2 attempts, got %v", err)
	}
	var perm *report.Permanent
	if errors.As(err, &perm) {
		t.Errorf("a missing Node is retryable, got a permanent error: %v", err)
	}
	if got := strings.Join(f.kinds(), " "); got != "patch list watch patch list watch" {
		t.Errorf("requests %q: want per attempt one patch, one list and one watch", got)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s: the wait is not bounded", d)
	}
	if s := buf.String(); strings.Count(s, "waited for the Node to register") != 2 || !strings.Contains(s, "NotFound") {
		t.Errorf("debug log %q: want each attempt's wait and its 404", s)
	}
}

// Watches the server keeps ending are bounded by RegistrationWatches in
// one attempt.
func TestWriterWatchesBounded(t *testing.T) {
	f := newFakeAPIServer(t, &fakeAPIServer{watchEnd: 1000})
	err := writerFor(t, f, report.RetryPolicy{Attempts: 1}).Write(t.Context(), succeeded())
	if !apierrors.IsNotFound(err) {
		t.Fatalf("want the Node's 404, got %v", err)
	}
	k := f.kinds()
	if n := strings.Count(strings.Join(k, " "), "watch"); n != RegistrationWatches {
		t.Errorf("%d watches (%v), want RegistrationWatches = %d", n, k, RegistrationWatches)
	}
}

// A server that refuses the watch or the list (403, 500) is asked with
// the patch itself every RegistrationPoll until the Node is there.
func TestWriterPollsWithoutWatch(t *testing.T) {
	for _, c := range []struct {
		name string
		f    *fakeAPIServer
		want string
	}{
		{"watch forbidden", &fakeAPIServer{watchStatus: 403, registerAfter404s: 3}, "patch list watch patch patch patch"},
		{"list fails", &fakeAPIServer{listStatus: 500, registerAfter404s: 2}, "patch list patch patch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeAPIServer(t, c.f)
			w := writerFor(t, f, report.RetryPolicy{Attempts: 1})
			log, buf := debugLog()
			w.Log = log
			if err := w.Write(t.Context(), succeeded()); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.kinds(), " "); got != c.want {
				t.Errorf("requests %q, want %q", got, c.want)
			}
			if !strings.Contains(buf.String(), "by=poll") {
				t.Errorf("debug log %q: want the wait, by poll", buf.String())
			}
		})
	}
}

// The patch after the wait is classified like any other: a 403 is
// permanent (one attempt), a 500 is retried.
func TestWriterPatchAfterWaitFails(t *testing.T) {
	f := newFakeAPIServer(t, &fakeAPIServer{patchStatus: []int{404, 403}, registerOnWatch: true})
	err := writerFor(t, f, report.RetryPolicy{Attempts: 3, Backoff: time.Millisecond}).Write(t.Context(), succeeded())
	var perm *report.Permanent
	if !errors.As(err, &perm) || !apierrors.IsForbidden(err) {
		t.Fatalf("want a permanent 403, got %v", err)
	}
	if got := strings.Join(f.kinds(), " "); got != "patch list watch patch" {
		t.Errorf("requests %q: a 403 must not be retried", got)
	}

	f = newFakeAPIServer(t, &fakeAPIServer{patchStatus: []int{404, 500}, registerOnWatch: true})
	if err := writerFor(t, f, report.RetryPolicy{Attempts: 3, Backoff: time.Millisecond}).Write(t.Context(), succeeded()); err != nil {
		t.Fatalf("a 500 after the wait is retried: %v", err)
	}
	if got := strings.Join(f.kinds(), " "); got != "patch list watch patch patch" {
		t.Errorf("requests %q: want the 500 retried by a new attempt", got)
	}
}

// The run's context ending stops the wait at once.
func TestWriterWaitStopsWithContext(t *testing.T) {
	f := newFakeAPIServer(t, &fakeAPIServer{})
	w := writerFor(t, f, report.RetryPolicy{Attempts: 1})
	w.RegistrationTimeout = time.Hour
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := w.Write(ctx, succeeded())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's end, got %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s after the context ended", d)
	}
}
