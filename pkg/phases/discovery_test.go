package phases

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/discovery"
	"github.com/machineadm/machineadm/pkg/spec"
)

// The wait runs in every join, right before kubeadm's preflight, and in
// no init.
func TestWaitClusterInfoInJoinTreeOnly(t *testing.T) {
	l, err := spec.Load([]byte(testspec.MinimalWorker), "worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	leaves := Bootstrap(l.Config).Leaves()
	i := slices.Index(leaves, WaitClusterInfoName)
	if i < 0 || i+1 >= len(leaves) || leaves[i-1] != "kubeadm-config" || leaves[i+1] != "preflight" {
		t.Errorf("join leaves %v: want kubeadm-config, %s, preflight in a row", leaves, WaitClusterInfoName)
	}
	init := *l.Config
	init.Spec.Action = machineadm.ActionInit
	if slices.Contains(Bootstrap(&init).Names(), WaitClusterInfoName) {
		t.Errorf("init tree has %s", WaitClusterInfoName)
	}
}

// logData is workerData with the log kept in buf.
func logData(t *testing.T, buf *bytes.Buffer) *Data {
	d, _ := workerData(t)
	d.Log = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return d
}

func runWait(t *testing.T, d *Data) (Result, error) {
	t.Helper()
	if _, err := KubeadmConfigPhase().Run(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return WaitClusterInfoPhase().Run(context.Background(), d)
}

// The phase hands the spec's discovery settings and the token read by
// kubeadm-config to the wait, bounded by spec.join.timeout, and never logs
// the token.
func TestWaitClusterInfoPhaseSettings(t *testing.T) {
	for _, tc := range []struct {
		timeout string
		want    time.Duration
	}{{"", discovery.DefaultClusterInfoTimeout}, {"5m", 5 * time.Minute}, {"15s", 15 * time.Second}} {
		var buf bytes.Buffer
		d := logData(t, &buf)
		d.Config.Spec.Join.Timeout = tc.timeout
		var got discovery.ClusterInfoWait
		d.WaitClusterInfo = func(ctx context.Context, w discovery.ClusterInfoWait) (discovery.ClusterInfoResult, error) {
			got = w
			return discovery.ClusterInfoResult{Attempts: 3, Waited: 400 * time.Millisecond, Unsigned: 380 * time.Millisecond, Pinned: true}, nil
		}
		res, err := runWait(t, d)
		if err != nil {
			t.Fatal(err)
		}
		j := d.Config.Spec.Join
		if got.Endpoint != j.APIServerEndpoint || got.Token != "abcdef.0123456789abcdef" || !slices.Equal(got.CACertHashes, j.CACertHashes) ||
			got.Interval != discovery.DefaultClusterInfoInterval || got.Timeout != tc.want || got.FastFor != discovery.DefaultClusterInfoFastFor {
			t.Errorf("timeout %q: wait %+v", tc.timeout, got)
		}
		if !strings.Contains(res.Summary(), "CA pinned") || !strings.Contains(res.Summary(), "3 request(s)") ||
			!strings.Contains(res.Summary(), "(380ms "+UnsignedMessage+")") || res.Changed {
			t.Errorf("result %+v", res)
		}
		if strings.Contains(buf.String(), "0123456789abcdef") || strings.Contains(res.Summary(), "0123456789abcdef") {
			t.Errorf("token logged:\n%s", buf.String())
		}
	}
}

// A refusal fails the phase with the wait's class; a wait that ran out
// of spec.join.timeout fails as Timeout too: kubeadm's discovery would
// wait for the same thing as long again.
func TestWaitClusterInfoPhaseOutcomes(t *testing.T) {
	var buf bytes.Buffer
	d := logData(t, &buf)
	d.WaitClusterInfo = func(ctx context.Context, w discovery.ClusterInfoWait) (discovery.ClusterInfoResult, error) {
		return discovery.ClusterInfoResult{Attempts: 1}, errclass.New(errclass.DiscoveryFailed, "pin", errors.New("not pinned"))
	}
	if _, err := runWait(t, d); err == nil {
		t.Error("refusal passed")
	} else if c, _ := errclass.Of(err); c != errclass.DiscoveryFailed {
		t.Errorf("class %s", c)
	}
	d.WaitClusterInfo = func(ctx context.Context, w discovery.ClusterInfoWait) (discovery.ClusterInfoResult, error) {
		return discovery.ClusterInfoResult{Attempts: 300}, errclass.New(errclass.Timeout, "", discovery.ErrClusterInfoPending)
	}
	_, err := runWait(t, d)
	if c, hint := errclass.Of(err); c != errclass.Timeout || !strings.Contains(hint, "spec.join.timeout") || !errors.Is(err, discovery.ErrClusterInfoPending) {
		t.Errorf("pending: class %s hint %q err %v; want Timeout naming spec.join.timeout", c, hint, err)
	}
}

// The real wait against a loopback port where nothing listens, bounded
// by spec.join.timeout (1s): the phase fails within the bound.
func TestWaitClusterInfoPhaseRealWaitBounded(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := l.Addr().String()
	l.Close()
	var buf bytes.Buffer
	d := logData(t, &buf)
	// 5s, not less: on a loaded machine the first refused attempt must
	// come back before the wait ends, or there is no refusal to report.
	d.Config.Spec.Join.APIServerEndpoint, d.Config.Spec.Join.Timeout = endpoint, "5s"
	start := time.Now()
	_, err = runWait(t, d)
	if c, _ := errclass.Of(err); c != errclass.Timeout || err == nil || !strings.Contains(err.Error(), "spec.join.timeout (5s)") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("class %s, err %v; want Timeout naming spec.join.timeout and the refused connection", c, err)
	}
	// Refused every time: the hint says nothing listens there, not that
	// the token is unsigned.
	if _, hint := errclass.Of(err); errors.Is(err, discovery.ErrClusterInfoPending) || !strings.Contains(hint, "refused") || strings.Contains(hint, "token") {
		t.Errorf("refused endpoint: err %v, hint %q", err, hint)
	}
	if el := time.Since(start); el > 60*time.Second {
		t.Errorf("a wait bounded by 5s took %s", el)
	}
}

// A dry run contacts nothing.
func TestWaitClusterInfoPhaseDryRun(t *testing.T) {
	d, _ := workerData(t)
	d.DryRun = true
	d.WaitClusterInfo = func(ctx context.Context, w discovery.ClusterInfoWait) (discovery.ClusterInfoResult, error) {
		t.Error("dry run waited")
		return discovery.ClusterInfoResult{}, nil
	}
	res, err := WaitClusterInfoPhase().Run(context.Background(), d)
	if err != nil || !strings.HasPrefix(res.Summary(), "dry run: would wait up to 5m0s") {
		t.Errorf("%+v %v", res, err)
	}
}
