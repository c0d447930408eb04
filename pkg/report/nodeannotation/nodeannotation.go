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
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
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
// moment after the kubelet's TLS bootstrap: a missing Node (404) is
// watched for within the attempt and patched once it is there (see
// DefaultRegistrationTimeout), and a Node still missing after that is
// retried like a network error, within Retry's bounds; other 4xx answers
// are final (*report.Permanent). The client is the kubelet's: its
// kubeconfig's credentials, user agent "machineadm", field manager
// "machineadm".
type Writer struct {
	// Root is prepended to Kubeconfig. Files the kubeconfig itself names
	// (the kubelet's client certificate) are read as written.
	Root string
	// Kubeconfig is the kubeconfig used. Default DefaultKubeconfig.
	Kubeconfig string
	// Retry bounds the attempts; the zero value is DefaultRetry.
	Retry report.RetryPolicy
	// RegistrationTimeout bounds, within one attempt, the wait for a Node
	// that is not registered yet. Default DefaultRegistrationTimeout; the
	// attempt's own bound (Retry.PerAttempt) applies too.
	RegistrationTimeout time.Duration
	// Log receives, at debug level, how long the writer waited for the
	// Node to register and how (watch or poll). Nil: no log.
	Log *slog.Logger
}

// DefaultRetry is the writer's retry policy for failed requests: 6
// attempts, 250 ms after the first failed one and doubling, 30 s in all,
// 10 s each.
var DefaultRetry = report.RetryPolicy{Attempts: 6, Backoff: 250 * time.Millisecond, Total: report.DefaultTotal, PerAttempt: report.DefaultPerAttempt}

// Waiting for the Node to register: a join's Node registers a moment
// after the kubelet's TLS bootstrap, the run's last kubeadm phase, so the
// first patch is often answered 404. Within one attempt the writer then
// watches for the Node (a list and a watch of the nodes with the field
// selector metadata.name=NAME, which the Node authorizer grants a kubelet
// for its own Node, as the kubelet's own informer does) and patches as
// soon as it is there, so the run ends within a round trip of the
// registration. DefaultRegistrationTimeout bounds the wait in one attempt
// (Writer.RegistrationTimeout) and RegistrationWatches the watches it
// opens (a watch the server ends is opened again from a new list); after
// either, the attempt fails with the
// 404 and Retry takes over. A server that refuses the list or the watch
// (an authorizer without the Node rules) is asked with the patch itself
// every RegistrationPoll instead, within the same bound.
const (
	DefaultRegistrationTimeout = 5 * time.Second
	RegistrationWatches        = 5
	RegistrationPoll           = 100 * time.Millisecond
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

// UpgradeValue is the annotation's "upgrade" member for an upgrade's
// report r: its result, the versions before and after, end time,
// duration, machineadm version and, for a failure, the failed phase,
// class and hint.
func UpgradeValue(r *report.BootstrapReport) map[string]any {
	v := map[string]any{
		"result": r.Result, "endTime": r.EndTime, "durationMs": r.Duration().Milliseconds(),
		"machineadmVersion": r.Machine.MachineadmVersion,
	}
	if r.Upgrade != nil {
		v["fromVersion"], v["toVersion"] = r.Upgrade.FromVersion, r.Upgrade.ToVersion
	}
	if r.Result != report.ResultSucceeded {
		v["failedPhase"], v["errorClass"], v["hint"] = r.FailedPhase, r.ErrorClass, r.Hint
	}
	return v
}

// MergeUpgrade returns the annotation value old (the bootstrap's, "" when
// the Node has none) with its "upgrade" member set to UpgradeValue(r):
// the bootstrap's outcome stays as it was, beside the last upgrade's.
func MergeUpgrade(old string, r *report.BootstrapReport) (string, error) {
	m := map[string]any{}
	if old != "" {
		if err := json.Unmarshal([]byte(old), &m); err != nil {
			m = map[string]any{}
		}
	}
	m["upgrade"] = UpgradeValue(r)
	data, err := json.Marshal(m)
	return string(data), err
}

// Write patches the Node when r is a successful bootstrap; for an
// upgrade (command "upgrade"), successful or not, it sets the
// annotation's "upgrade" member and keeps the rest (MergeUpgrade).
func (w *Writer) Write(ctx context.Context, r *report.BootstrapReport) error {
	isUpgrade := r.Command == "upgrade"
	if (r.Result != report.ResultSucceeded && !isUpgrade) || r.Machine.NodeName == "" {
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
		if isUpgrade {
			// The upgraded Node exists; its bootstrap outcome stays.
			n, err := client.Nodes().Get(ctx, r.Machine.NodeName, metav1.GetOptions{})
			if err != nil {
				return classify(err)
			}
			val, err := MergeUpgrade(n.Annotations[Annotation], r)
			if err != nil {
				return &report.Permanent{Err: err}
			}
			if patch, err = json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{Annotation: val}}}); err != nil {
				return &report.Permanent{Err: err}
			}
		}
		return classify(w.attempt(ctx, client, r.Machine.NodeName, patch))
	})
}

// attempt patches the Node name; when it is not registered yet it waits
// for it (waitRegistered) and patches again. It returns the last patch's
// error, or the wait's when that is not the Node's absence (ctx ended).
func (w *Writer) attempt(ctx context.Context, client corev1client.NodesGetter, name string, patch []byte) error {
	err := patchNode(ctx, client, name, patch)
	if !apierrors.IsNotFound(err) {
		return err
	}
	start := time.Now()
	timeout := w.RegistrationTimeout
	if timeout <= 0 {
		timeout = DefaultRegistrationTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	how, werr := waitRegistered(wctx, client, name, patch)
	if how == "poll" {
		// The poll's patches are the wait: its last answer is the result.
		err = werr
	} else if werr == nil {
		err = patchNode(ctx, client, name, patch)
	} else if ctx.Err() != nil {
		err = ctx.Err()
	}
	// Else the wait timed out or ran out of watches: err stays the 404.
	if w.Log != nil {
		w.Log.Debug("node-annotation: waited for the Node to register", "node", name, "by", how, "waited", time.Since(start).Round(time.Millisecond), "error", err)
	}
	return err
}

// patchNode sets the annotation on the Node name.
func patchNode(ctx context.Context, client corev1client.NodesGetter, name string, patch []byte) error {
	_, err := client.Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "machineadm"})
	return err
}

// classify marks an attempt's error for Retry: nil stays nil; a missing
// Node, throttling, timeouts and 5xx are retried; another 4xx answer is
// *report.Permanent; anything else (network errors) is retried.
func classify(err error) error {
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
}

// waitRegistered waits until the Node name exists, within ctx, by a list
// and watch of that one Node ("watch"); at most RegistrationWatches
// watches are opened. When the server refuses the list or the watch, or
// answers it with an error, it polls with the patch itself instead
// ("poll") every RegistrationPoll, and returns the last patch's error
// (nil: the patch is done). The watch returns nil once the Node is there,
// ctx's error when ctx ends, and an error naming the watches when they ran
// out.
func waitRegistered(ctx context.Context, client corev1client.NodesGetter, name string, patch []byte) (string, error) {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	for range RegistrationWatches {
		list, err := client.Nodes().List(ctx, metav1.ListOptions{FieldSelector: sel})
		if ctx.Err() != nil {
			return "watch", ctx.Err()
		}
		if err != nil {
			return "poll", poll(ctx, client, name, patch)
		}
		if len(list.Items) > 0 {
			return "watch", nil
		}
		wi, err := client.Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
		if ctx.Err() != nil {
			return "watch", ctx.Err()
		}
		if err != nil {
			return "poll", poll(ctx, client, name, patch)
		}
		found, evErr := watchFor(ctx, wi, name)
		wi.Stop()
		switch {
		case found:
			return "watch", nil
		case ctx.Err() != nil:
			return "watch", ctx.Err()
		case evErr != nil && !apierrors.IsResourceExpired(evErr) && !apierrors.IsGone(evErr):
			return "poll", poll(ctx, client, name, patch)
		}
		// The server ended the watch (its timeout, a restart) or the list's
		// resource version expired: list again.
	}
	return "watch", fmt.Errorf("node %s not registered after %d watches", name, RegistrationWatches)
}

// watchFor reads wi until an event shows the Node name (found), an error
// event (its error: an expired resource version, a refused watch), the
// watch's end or ctx's.
func watchFor(ctx context.Context, wi watch.Interface, name string) (found bool, evErr error) {
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Error:
				return false, apierrors.FromObject(ev.Object)
			case watch.Added, watch.Modified:
				if n, ok := ev.Object.(*corev1.Node); ok && n.Name == name {
					return true, nil
				}
			}
		}
	}
}

// poll patches the Node name every RegistrationPoll while the answer is
// 404, until ctx ends; it returns the last patch's error (the last 404
// when ctx cut a patch short).
func poll(ctx context.Context, client corev1client.NodesGetter, name string, patch []byte) error {
	var notFound error
	for {
		err := patchNode(ctx, client, name, patch)
		if ctx.Err() != nil && notFound != nil {
			return notFound
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		notFound = err
		if !sleep(ctx, RegistrationPoll) {
			return err
		}
	}
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
