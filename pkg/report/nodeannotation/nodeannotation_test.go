package nodeannotation

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/report"
)

// request is what the fake API server saw.
type request struct {
	Method, Path, Query, ContentType, Auth string
	Body                                   []byte
}

// apiServer is an httptest TLS server standing in for the API server's
// Node endpoint: it records each request and answers with the next status
// of its script (200 with a Node when the script is over).
func apiServer(t *testing.T, script ...int) (*httptest.Server, *[]request, *sync.Mutex) {
	var mu sync.Mutex
	var got []request
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), body})
		n := len(got)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n <= len(script) {
			code := script[n-1]
			w.WriteHeader(code)
			reason := map[int]string{404: "NotFound", 403: "Forbidden", 500: "InternalError"}[code]
			json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code,
				"details": map[string]any{"name": "w1", "kind": "nodes"}, "message": "scripted"})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": "Node", "apiVersion": "v1", "metadata": map[string]any{"name": "w1"}})
	}))
	t.Cleanup(srv.Close)
	return srv, &got, &mu
}

// kubeconfig writes a kubelet-like kubeconfig for srv under root.
func kubeconfig(t *testing.T, root string, srv *httptest.Server) {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "k",
		"clusters": []any{map[string]any{"name": "c", "cluster": map[string]any{"server": srv.URL, "certificate-authority-data": ca}}},
		"users":    []any{map[string]any{"name": "u", "user": map[string]any{"token": "node-credential"}}},
		"contexts": []any{map[string]any{"name": "k", "context": map[string]any{"cluster": "c", "user": "u"}}},
	}
	data, _ := json.Marshal(cfg)
	p := filepath.Join(root, DefaultKubeconfig)
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func succeeded() *report.BootstrapReport {
	start := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	return &report.BootstrapReport{APIVersion: report.APIVersion, Kind: report.Kind, Command: "bootstrap", Result: report.ResultSucceeded,
		Machine:   report.Machine{Hostname: "w1", NodeName: "w1", MachineadmVersion: "v0.1.0", Action: "Join"},
		StartTime: start, EndTime: start.Add(83 * time.Second), Phases: make([]report.Phase, 7)}
}

func TestWriterSkipsAndFails(t *testing.T) {
	srv, got, mu := apiServer(t, 403)
	root := t.TempDir()
	kubeconfig(t, root, srv)
	w := &Writer{Root: root, Retry: report.RetryPolicy{Attempts: 3, Backoff: time.Millisecond}}

	failed := succeeded()
	failed.Result = report.ResultFailed
	prepare := succeeded()
	prepare.Machine.NodeName = ""
	for _, r := range []*report.BootstrapReport{failed, prepare} {
		if err := w.Write(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	if len(*got) != 0 {
		t.Fatalf("a failure or a report without node must not touch the API: %d requests", len(*got))
	}
	mu.Unlock()

	err := w.Write(t.Context(), succeeded())
	if err == nil || !strings.Contains(err.Error(), "scripted") {
		t.Fatalf("want the 403, got %v", err)
	}
	mu.Lock()
	if len(*got) != 1 {
		t.Errorf("a 403 must not be retried: %d requests", len(*got))
	}
	mu.Unlock()

	// Bounded: a server that keeps failing is given up on.
	srv500, got500, mu500 := apiServer(t, 500, 500, 500, 500, 500)
	root500 := t.TempDir()
	kubeconfig(t, root500, srv500)
	err = (&Writer{Root: root500, Retry: report.RetryPolicy{Attempts: 2, Backoff: time.Millisecond}}).Write(t.Context(), succeeded())
	mu500.Lock()
	if err == nil || len(*got500) != 2 {
		t.Errorf("500s: want 2 attempts and an error, got %d, %v", len(*got500), err)
	}
	mu500.Unlock()

	if err := (&Writer{Root: t.TempDir()}).Write(t.Context(), succeeded()); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("missing kubeconfig: %v", err)
	}
}
