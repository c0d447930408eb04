package containerd

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// serveNoCRI serves a real gRPC server without any service on a unix
// socket, as containerd does when its CRI plugin failed to load.
func serveNoCRI(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return sock
}

// A runtime that answers without a CRI v1 RuntimeService fails the wait
// after CRIUnimplementedGrace, with an error that names the CRI plugin,
// instead of after the whole timeout (two minutes in a bootstrap).
func TestWaitCRIReadyRuntimeWithoutCRI(t *testing.T) {
	sock := serveNoCRI(t)
	const timeout = 90 * time.Second
	start := time.Now()
	err := WaitCRIReady(context.Background(), "unix://"+sock, timeout)
	took := time.Since(start)
	if err == nil {
		t.Fatal("WaitCRIReady succeeded against a runtime without a CRI service")
	}
	if !strings.Contains(err.Error(), "serves no CRI v1 RuntimeService") || !strings.Contains(err.Error(), "io.containerd.grpc.v1.cri") {
		t.Errorf("error does not say the CRI plugin is missing: %v", err)
	}
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("error does not wrap the runtime's Unimplemented answer: %v", err)
	}
	if took >= timeout/2 {
		t.Errorf("WaitCRIReady took %s, want a few seconds (the grace for a runtime without CRI), well under the %s timeout", took, timeout)
	}
}

// A runtime that is not there at all is waited for until the timeout, as
// before: containerd may still be starting.
func TestWaitCRIReadyMissingSocketWaitsForTimeout(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "absent.sock")
	err := WaitCRIReady(context.Background(), "unix://"+sock, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "not ready within 2s") {
		t.Fatalf("want the timeout error, got %v", err)
	}
}
