//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// agentServer is the download location of scenario 2: an HTTP server on
// the harness bridge address only (never 0.0.0.0), serving fixed files, as
// a mirror in the management cluster would serve the machineadm agent.
type agentServer struct {
	srv  *http.Server
	base string // http://10.213.0.1:PORT

	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
}

// startAgentServer serves files (URL path -> content) until ctx ends or
// close is called.
func startAgentServer(files map[string][]byte) (*agentServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(bridgeIP, "0"))
	if err != nil {
		return nil, fmt.Errorf("agent server: %w", err)
	}
	a := &agentServer{base: "http://" + ln.Addr().String(), files: map[string][]byte{}, hits: map[string]int{}}
	for p, b := range files {
		a.files[p] = b
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		b, ok := a.files[r.URL.Path]
		if ok {
			a.hits[r.URL.Path]++
		}
		a.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b)
	})
	a.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

// add serves one more file at path.
func (a *agentServer) add(path string, b []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.files[path] = b
}

// url returns the full URL of a served path.
func (a *agentServer) url(path string) string { return a.base + path }

// count returns how often path was requested.
func (a *agentServer) count(path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hits[path]
}

func (a *agentServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.srv.Shutdown(ctx)
}
