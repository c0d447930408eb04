// Package nodeannotation writes a short summary of a successful bootstrap
// as an annotation on the machine's Node object, so `kubectl describe node`
// shows which machineadm bootstrapped the node, when and how long it took.
// It is a report.Writer kept apart from package report because it needs
// client-go.
package nodeannotation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/machineadm/machineadm/pkg/report"
)

// Annotation is the Node annotation's key.
const Annotation = "machineadm.io/bootstrap-report"

// DefaultKubeconfig is the kubelet's kubeconfig after kubeadm init or join
// (kubeadm constants.KubeletKubeConfigFileName). The kubelet's own
// credentials may change its Node's annotations under the NodeRestriction
// admission plugin.
const DefaultKubeconfig = "/etc/kubernetes/kubelet.conf"

// Writer patches the Annotation on the Node named in the report
// (Machine.NodeName) after a successful run; a failed run, or a report
// without a node name (`prepare`), writes nothing. The node may register a
// moment after the kubelet's TLS bootstrap, so a missing Node (404) is
// retried like a network error, within Retry's bounds; other 4xx answers
// are final.
type Writer struct {
	// Root is prepended to Kubeconfig. Files the kubeconfig itself names
	// (the kubelet's client certificate) are read as written.
	Root string
	// Kubeconfig is the kubeconfig used. Default DefaultKubeconfig.
	Kubeconfig string
	// Retry bounds the attempts; the zero value is DefaultRetry.
	Retry report.RetryPolicy
}

// DefaultRetry is the writer's retry policy for failed requests: 6
// attempts, 250 ms after the first failed one and doubling, 30 s in all,
// 10 s each.
var DefaultRetry = report.RetryPolicy{Attempts: 6, Backoff: 250 * time.Millisecond, Total: report.DefaultTotal, PerAttempt: report.DefaultPerAttempt}

// Waiting for the Node to register: a join's Node registers a moment
// after the kubelet's TLS bootstrap, the run's last kubeadm phase, so the
// first answer is often 404. Within one attempt the writer asks again
// every RegistrationPoll, at most RegistrationPolls times (5 s), before
// the attempt fails and Retry takes over: the run ends within 100 ms of
// the registration instead of idling through a backoff.
const (
	RegistrationPoll  = 100 * time.Millisecond
	RegistrationPolls = 50
)

// Name is "node-annotation".
func (w *Writer) Name() string { return "node-annotation" }

// Value is the annotation's value for r: a compact JSON object with the
// result, command, action, end time, duration in milliseconds, phase count
// and machineadm version.
func Value(r *report.BootstrapReport) (string, error) {
	v := struct {
		Result     report.Result `json:"result"`
		Command    string        `json:"command"`
		Action     string        `json:"action,omitempty"`
		EndTime    time.Time     `json:"endTime"`
		DurationMs int64         `json:"durationMs"`
		Phases     int           `json:"phases"`
		Machineadm string        `json:"machineadmVersion"`
	}{r.Result, r.Command, r.Machine.Action, r.EndTime, r.Duration().Milliseconds(), len(r.Phases), r.Machine.MachineadmVersion}
	data, err := json.Marshal(v)
	return string(data), err
}

// Patch is the JSON merge patch (RFC 7386) that sets the annotation.
func Patch(r *report.BootstrapReport) ([]byte, error) {
	val, err := Value(r)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{Annotation: val}}})
}

// Write patches the Node when r is a success.
func (w *Writer) Write(ctx context.Context, r *report.BootstrapReport) error {
	if r.Result != report.ResultSucceeded || r.Machine.NodeName == "" {
		return nil
	}
	patch, err := Patch(r)
	if err != nil {
		return err
	}
	path := w.Kubeconfig
	if path == "" {
		path = DefaultKubeconfig
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", report.HostPath(w.Root, path))
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	cfg.UserAgent = "machineadm"
	client, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return err
	}
	retry := w.Retry
	if retry == (report.RetryPolicy{}) {
		retry = DefaultRetry
	}
	return retry.Do(ctx, func(ctx context.Context) error {
		var err error
		for n := 1; ; n++ {
			_, err = client.Nodes().Patch(ctx, r.Machine.NodeName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "machineadm"})
			if !apierrors.IsNotFound(err) || n >= RegistrationPolls || !sleep(ctx, RegistrationPoll) {
				break
			}
		}
		var status apierrors.APIStatus
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err), apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err):
			return err
		case errors.As(err, &status) && status.Status().Code >= 400 && status.Status().Code < 500:
			return &report.Permanent{Err: err}
		}
		return err
	})
}

// sleep waits d, or less when ctx ends first (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
