//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The nspawn provider's control-plane load balancer, the stand-in for the
// haproxy container Cluster API's Docker provider runs: a TCP proxy in the
// test binary on the harness bridge's address (capiLBAddr, port 6443,
// which the machines reach as their gateway), in front of the API servers
// of the provider's control-plane machines. Like haproxy's health check it
// only sends connections to a backend whose /readyz answered 200 within
// the last check: a control-plane machine whose etcd member was removed
// before the machine stops, or one still joining, gets no traffic.
const (
	capiLBPort = 6443
	// capiLBCheckInterval is how often every backend's /readyz is asked.
	capiLBCheckInterval = time.Second
	// capiLBCheckTimeout bounds one health check and one backend dial.
	capiLBCheckTimeout = 2 * time.Second
)

// capiLBAddr is the control-plane endpoint the load balancer serves.
var capiLBAddr = net.JoinHostPort(bridgeIP, fmt.Sprint(capiLBPort))

// controlPlaneLB proxies TCP connections to healthy API servers.
type controlPlaneLB struct {
	backends func() []string // the control-plane machines' addresses
	logf     func(string, ...any)

	mu      sync.Mutex
	healthy []string
	conns   map[string]map[net.Conn]struct{} // open upstream connections by backend
	next    atomic.Uint64
}

// startControlPlaneLB listens on capiLBAddr until ctx ends.
func startControlPlaneLB(ctx context.Context, backends func() []string, logf func(string, ...any)) (*controlPlaneLB, error) {
	ln, err := net.Listen("tcp", capiLBAddr)
	if err != nil {
		return nil, fmt.Errorf("control-plane load balancer: %w", err)
	}
	lb := &controlPlaneLB{backends: backends, logf: logf, conns: map[string]map[net.Conn]struct{}{}}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go lb.check(ctx)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go lb.proxy(conn)
		}
	}()
	return lb, nil
}

// check asks each backend's /readyz (anonymous, as haproxy's check does;
// kubeadm's API server allows it) every capiLBCheckInterval.
func (lb *controlPlaneLB) check(ctx context.Context) {
	hc := &http.Client{
		Timeout: capiLBCheckTimeout,
		// The check only needs the status; the serving certificate is
		// the workload cluster's, which the clients verify themselves.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
	}
	last := ""
	for {
		var up []string
		for _, b := range lb.backends() {
			resp, err := hc.Get("https://" + net.JoinHostPort(b, fmt.Sprint(capiLBPort)) + "/readyz")
			if err != nil {
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				up = append(up, b)
			}
		}
		lb.mu.Lock()
		lb.healthy = up
		// A backend that stopped answering loses its connections, as
		// haproxy's on-marked-down shutdown-sessions: its clients
		// reconnect to a healthy one instead of waiting on a machine
		// that is going away.
		for b, cs := range lb.conns {
			if !slices.Contains(up, b) {
				for c := range cs {
					c.Close()
				}
			}
		}
		lb.mu.Unlock()
		if s := fmt.Sprint(up); s != last {
			lb.logf("load balancer: healthy API servers %s", s)
			last = s
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(capiLBCheckInterval):
		}
	}
}

// proxy connects conn to a healthy backend, trying each once, round
// robin.
func (lb *controlPlaneLB) proxy(conn net.Conn) {
	defer conn.Close()
	lb.mu.Lock()
	bs := append([]string(nil), lb.healthy...)
	lb.mu.Unlock()
	if len(bs) == 0 {
		return
	}
	start := int(lb.next.Add(1))
	for i := range bs {
		b := bs[(start+i)%len(bs)]
		up, err := net.DialTimeout("tcp", net.JoinHostPort(b, fmt.Sprint(capiLBPort)), capiLBCheckTimeout)
		if err != nil {
			continue
		}
		lb.mu.Lock()
		if lb.conns[b] == nil {
			lb.conns[b] = map[net.Conn]struct{}{}
		}
		lb.conns[b][up] = struct{}{}
		lb.mu.Unlock()
		defer func() {
			up.Close()
			lb.mu.Lock()
			delete(lb.conns[b], up)
			lb.mu.Unlock()
		}()
		done := make(chan struct{}, 2)
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			done <- struct{}{}
		}
		go pipe(up, conn)
		go pipe(conn, up)
		// TLS does not half-close: the first side to end ends both.
		<-done
		conn.Close()
		up.Close()
		<-done
		return
	}
}
