// Package cpcheck is one health check of a node's control plane with
// kubeadm's own waiter, bounded (Check), and the wait until health checks
// pass in a row over a span (WaitStable) that day2's control-plane wait
// and the Systemd runtime's unit upgrade share.
package cpcheck

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/apiclient"
)

// Grace is how long past its own timeout one check may take before
// Check stops waiting for it.
const Grace = time.Second

// Check waits, with kubeadm's waiter (apiclient.KubeWaiter's
// WaitForControlPlaneComponents, polling every 500 ms for at most
// timeout), until kube-apiserver (through client), kube-controller-manager
// and kube-scheduler at the addresses and ports of pods answer their
// health endpoints; the waiter's lines go to out (nil: discarded).
//
// The waiter asks the controller manager and the scheduler with an HTTP
// client that has no timeout and does not stop a request at its own
// timeout, so a component that accepts connections and never answers (a
// stopped or deadlocked process: the kernel still completes the
// handshake) would hold it for ever. Check stops waiting timeout+Grace
// after it began, with an error naming the components that had not
// answered, or when ctx ends, with ctx's error. The waiter's goroutine is
// then left blocked on that connection until the process exits.
func Check(ctx context.Context, client kubernetes.Interface, pods map[string]*v1.Pod, address string, timeout time.Duration, out io.Writer) error {
	log := &waiterLog{out: out}
	res := make(chan error, 1)
	go func() {
		res <- apiclient.NewKubeWaiter(client, timeout, log).WaitForControlPlaneComponents(pods, address)
	}()
	t := time.NewTimer(timeout + Grace)
	defer t.Stop()
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("kubeadm's health check of %s did not return within %s: accepts connections and does not answer", strings.Join(log.pending(), ", "), timeout+Grace)
	}
}

// waiterLog keeps the lines kubeadm's waiter writes ("[control-plane-check]
// Checking NAME at URL", "NAME is healthy after D", "NAME is not healthy
// after D") and passes them on to out, safe for its goroutines.
type waiterLog struct {
	mu  sync.Mutex
	b   strings.Builder
	out io.Writer
}

func (w *waiterLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if w.out != nil {
		return w.out.Write(p)
	}
	return len(p), nil
}

// pending are the components the waiter has not reported on.
func (w *waiterLog) pending() []string {
	w.mu.Lock()
	text := w.b.String()
	w.mu.Unlock()
	var out []string
	for _, name := range kubeadmconstants.ControlPlaneComponents {
		if !strings.Contains(text, "] "+name+" is healthy after") && !strings.Contains(text, "] "+name+" is not healthy after") {
			out = append(out, name)
		}
	}
	return out
}
