//go:build !windows

package day2

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/machineadm/machineadm/internal/testassets"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// TestWaitNodeVersionWatchesTheNode runs WaitNodeVersion against a real
// API server (envtest). With the reads an hour apart, only the watch can
// see the kubelet report: the wait returns once the Node's status says
// the new version and Ready. A Node that already reports it returns at
// the first read; one that never does fails KubeletFailed, naming the
// version it last saw.
func TestWaitNodeVersionWatchesTheNode(t *testing.T) {
	cfg := testassets.StartEnvtest(t)
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	setStatus := func(name, version string, ready corev1.ConditionStatus) {
		t.Helper()
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.NodeInfo.KubeletVersion = version
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "Test", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"w1", "w2", "w3"} {
		if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatus(name, "v1.36.3", corev1.ConditionTrue)
	}

	defer func(p time.Duration) { nodeVersionPoll = p }(nodeVersionPoll)
	nodeVersionPoll = time.Hour

	// w1: the kubelet reports the new version, first not Ready, then
	// Ready; a change of another Node in between does not end the wait.
	errs := make(chan error, 1)
	go func() { errs <- WaitNodeVersion(ctx, c, "w1", "v1.37.2", 2*time.Minute) }()
	time.Sleep(time.Second)
	setStatus("w2", "v1.37.2", corev1.ConditionTrue)
	setStatus("w1", "v1.37.2", corev1.ConditionFalse)
	select {
	case err := <-errs:
		t.Fatalf("the wait ended before w1 was Ready at v1.37.2: %v", err)
	case <-time.After(2 * time.Second):
	}
	setStatus("w1", "v1.37.2", corev1.ConditionTrue)
	if err := <-errs; err != nil {
		t.Fatalf("w1 reports v1.37.2 and Ready, but the wait failed: %v", err)
	}

	// w2 already reports it: the first read ends the wait.
	if err := WaitNodeVersion(ctx, c, "w2", "v1.37.2", time.Minute); err != nil {
		t.Fatalf("w2: %v", err)
	}

	// w3 never does.
	err = WaitNodeVersion(ctx, c, "w3", "v1.37.2", 3*time.Second)
	if c, _ := errclass.Of(err); c != errclass.KubeletFailed || !strings.Contains(err.Error(), `"v1.36.3"`) {
		t.Fatalf("w3 never reported v1.37.2: want KubeletFailed naming v1.36.3, got %v", err)
	}

	// A Node the reads cannot get (here: none of that name; a refused
	// credential alike): the error gives the read's failure, which the
	// wait used to drop, leaving "last seen: """ and a hint about the
	// kubelet's binary.
	err = WaitNodeVersion(ctx, c, "w9", "v1.37.2", 2*time.Second)
	if c, _ := errclass.Of(err); c != errclass.KubeletFailed || !strings.Contains(err.Error(), `the last read failed: nodes "w9" not found`) {
		t.Fatalf("w9 does not exist: want KubeletFailed with the read's error, got %v", err)
	}

	// A cancelled run (a signal) ends the wait with ctx's error, not
	// KubeletFailed once the timeout is over.
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(500*time.Millisecond, cancel)
	if err := WaitNodeVersion(cctx, c, "w3", "v1.37.2", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: want context.Canceled, got %v", err)
	}
}
