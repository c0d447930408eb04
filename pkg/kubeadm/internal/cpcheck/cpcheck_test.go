package cpcheck

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
)

// components are the pods of a control plane whose API server is srv and
// whose controller manager and scheduler listen at the given loopback
// ports, with a client of srv.
func components(t *testing.T, srv *httptest.Server, cm, sched string) (kubernetes.Interface, map[string]*v1.Pod) {
	t.Helper()
	_, api, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string, args ...string) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: name, Command: append([]string{name}, args...)}}}}
	}
	return client, map[string]*v1.Pod{
		kubeadmconstants.KubeAPIServer:         pod("kube-apiserver", "--advertise-address=127.0.0.1", "--secure-port="+api),
		kubeadmconstants.KubeControllerManager: pod("kube-controller-manager", "--bind-address=127.0.0.1", "--secure-port="+cm),
		kubeadmconstants.KubeScheduler:         pod("kube-scheduler", "--bind-address=127.0.0.1", "--secure-port="+sched),
	}
}

func healthyServer(t *testing.T) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	t.Cleanup(srv.Close)
	return srv
}

func port(t *testing.T, srv *httptest.Server) string {
	_, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckHealthy: components that answer pass, and the waiter's lines
// reach out.
func TestCheckHealthy(t *testing.T) {
	srv := healthyServer(t)
	client, pods := components(t, srv, port(t, srv), port(t, srv))
	var out strings.Builder
	if err := Check(context.Background(), client, pods, "127.0.0.1", 10*time.Second, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kube-scheduler is healthy after") {
		t.Errorf("output %q, want the waiter's lines", out.String())
	}
}

// TestCheckSilentComponent: a scheduler that accepts connections and
// never answers (a stopped or deadlocked process) ends the check at its
// bound, naming it. kubeadm's waiter asks it with an HTTP client without a
// timeout and does not stop the request at its own: it hung for ever.
func TestCheckSilentComponent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn // never read, never answered
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	_, silent, _ := net.SplitHostPort(ln.Addr().String())
	srv := healthyServer(t)
	client, pods := components(t, srv, port(t, srv), silent)
	done := make(chan error, 1)
	go func() { done <- Check(context.Background(), client, pods, "127.0.0.1", 2*time.Second, nil) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "kube-scheduler") || strings.Contains(err.Error(), "kube-controller-manager") {
			t.Fatalf("err = %v, want it to name kube-scheduler alone", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a check bounded by 2 s did not return within a minute")
	}
}

// TestCheckContext: ctx's end ends the check with ctx's error.
func TestCheckContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	_, closed, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // refused: the waiter polls until its timeout
	srv := healthyServer(t)
	client, pods := components(t, srv, closed, closed)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	if err := Check(ctx, client, pods, "127.0.0.1", time.Minute, nil); err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
