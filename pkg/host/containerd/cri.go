package containerd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRIPollInterval is how often WaitCRIReady asks the runtime.
const CRIPollInterval = 500 * time.Millisecond

// WaitCRIReady waits until the CRI runtime at endpoint
// ("unix:///run/containerd/containerd.sock") answers a CRI Status call
// with the RuntimeReady condition true, or timeout passes. A freshly
// restarted containerd accepts connections before its CRI plugin is
// initialised ("server is not initialized yet"); kubeadm's preflight would
// fail on such a runtime. The error of the last attempt is returned on
// timeout.
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
	for {
		last = criReady(ctx, client)
		if last == nil {
			return nil
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
