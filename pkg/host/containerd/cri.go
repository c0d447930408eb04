package containerd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRIPollInterval is how often WaitCRIReady asks the runtime.
const CRIPollInterval = 500 * time.Millisecond

// CRIUnimplementedGrace is how long WaitCRIReady keeps asking a runtime
// whose gRPC server answers but serves no CRI v1 RuntimeService before
// it gives up. containerd registers every gRPC service before it serves,
// so such an answer means its CRI plugin failed to load (for example
// "failed to create fsnotify watcher: too many open files") and will not
// come back without a fix and a restart; the grace only covers a
// process being replaced under the socket.
const CRIUnimplementedGrace = 5 * time.Second

// WaitCRIReady waits until the CRI runtime at endpoint
// ("unix:///run/containerd/containerd.sock") answers a CRI Status call
// with the RuntimeReady condition true, or timeout passes. A freshly
// restarted containerd accepts connections before its CRI plugin is
// initialised ("server is not initialized yet"); kubeadm's preflight would
// fail on such a runtime. The error of the last attempt is returned on
// timeout. A runtime that answers without a CRI v1 RuntimeService
// (gRPC Unimplemented) for CRIUnimplementedGrace is an error at once,
// which says that containerd's CRI plugin did not load.
func WaitCRIReady(ctx context.Context, endpoint string, timeout time.Duration) error {
	target := endpoint
	if !strings.HasPrefix(target, "unix://") {
		target = "unix://" + strings.TrimPrefix(target, "unix:")
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("CRI endpoint %s: %w", endpoint, err)
	}
	defer conn.Close()
	client := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	var unimplementedSince time.Time
	for {
		last = criReady(ctx, client)
		if last == nil {
			return nil
		}
		if status.Code(last) != codes.Unimplemented {
			unimplementedSince = time.Time{}
		} else if unimplementedSince.IsZero() {
			unimplementedSince = time.Now()
		} else if time.Since(unimplementedSince) >= CRIUnimplementedGrace {
			return fmt.Errorf("the runtime at %s answers but serves no CRI v1 RuntimeService (containerd's CRI plugin did not load: its log says why, after \"failed to load plugin io.containerd.grpc.v1.cri\"): %w", endpoint, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRI runtime at %s not ready within %s: %w", endpoint, timeout, last)
		case <-time.After(CRIPollInterval):
		}
	}
}

func criReady(ctx context.Context, client runtimeapi.RuntimeServiceClient) error {
	callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := client.Status(callCtx, &runtimeapi.StatusRequest{})
	if err != nil {
		return err
	}
	for _, c := range st.GetStatus().GetConditions() {
		if c.GetType() == runtimeapi.RuntimeReady {
			if c.GetStatus() {
				return nil
			}
			return fmt.Errorf("RuntimeReady is false: %s %s", c.GetReason(), c.GetMessage())
		}
	}
	return fmt.Errorf("no RuntimeReady condition in the CRI status")
}
