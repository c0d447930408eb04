package day2

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// The kubelet's annotations on a static pod and its mirror pod
// (k8s.io/kubernetes/pkg/kubelet/types: ConfigHashAnnotationKey,
// ConfigSourceAnnotationKey).
const (
	// ConfigHashAnnotation is the hash the kubelet computed for a static
	// pod's manifest: the static pod's UID, copied onto its mirror pod.
	ConfigHashAnnotation = "kubernetes.io/config.hash"
	// configSourceAnnotation says where the kubelet read a pod from;
	// "file" for a manifest of its static pod directory.
	configSourceAnnotation = "kubernetes.io/config.source"
)

// ErrNodeProxyForbidden marks a wait that ended because the API server
// refused, forbiddenChecks times in a row, to give the kubelet's pods
// through its node proxy: the credential lacks the nodes/proxy permission
// (get), and waiting longer would not change that.
var ErrNodeProxyForbidden = errors.New("the API server forbids reading the kubelet's pods through its node proxy")

// forbiddenChecks is how many checks in a row answered 403 Forbidden by
// the node proxy end the wait, once they span ForbiddenFor (not one: an
// API server that has just started may refuse until its authorizer has
// read the RBAC rules).
const forbiddenChecks = 3

// DefaultForbiddenFor is how long the node proxy must have answered 403
// Forbidden, check after check, before the wait ends: 10 s, enough for
// the RBAC caches of an API server the kubelet has just restarted. A
// count alone shrank with the interval: three checks 500 ms apart are
// 1 s.
const DefaultForbiddenFor = 10 * time.Second

// StaticPodsCurrent is the wait until the kubelet runs the static pods of
// the manifests now on disk (WaitStaticPodsCurrent).
type StaticPodsCurrent struct {
	// Client reaches an API server (the node's own, with the admin
	// credential: it reads the mirror pods and, through the API server's
	// node proxy, the kubelet's /pods).
	Client clientset.Interface
	// Node is the Node's name (the mirror pods are COMPONENT-NODE in
	// kube-system).
	Node string
	// Components are the static pods to wait for ("etcd",
	// "kube-apiserver", …); none: nothing to wait for.
	Components []string
	// Timeout bounds the wait (wall clock); required, > 0.
	Timeout time.Duration
	// Interval is the pause between two checks; default
	// DefaultHealthInterval. At most Timeout/Interval+1 checks are made.
	Interval time.Duration
	// ForbiddenFor is how long the node proxy must answer 403 Forbidden,
	// at least forbiddenChecks checks in a row, before the wait ends with
	// ErrNodeProxyForbidden; default DefaultForbiddenFor.
	ForbiddenFor time.Duration
}

// WaitStaticPodsCurrent waits until, for every component, the kubelet on
// w.Node runs the static pod of the manifest it reads now and that pod is
// Ready: the hash the kubelet gave the manifest (the
// kubernetes.io/config.hash of the file-sourced pod in the kubelet's own
// /pods, asked through the API server's node proxy) equals the one on the
// component's mirror pod, and the mirror pod is Running and Ready.
//
// The hash is the kubelet's, not computed here: it covers the manifest as
// the kubelet decoded and defaulted it, so a kubelet of another version
// gives the same file another hash and replaces the pod. That is what
// happens after a kubelet upgrade: the new kubelet reads the unchanged
// manifests, gives them new hashes and restarts every static pod, some
// seconds after it reports Ready, while the old containers still answer
// the health checks. After a manifest was rewritten, the same comparison
// holds until the kubelet has started the new pod.
//
// It gives up after w.Timeout or Timeout/Interval+1 checks, whichever
// comes first, with an *errclass.Error of class ControlPlaneUnhealthy, a
// hint, and what the last check saw; sooner, wrapping
// ErrNodeProxyForbidden, when the node proxy answered 403 Forbidden at
// least forbiddenChecks times in a row over w.ForbiddenFor; ctx's end
// ends it with ctx's error.
func WaitStaticPodsCurrent(ctx context.Context, w StaticPodsCurrent) error {
	if len(w.Components) == 0 {
		return nil
	}
	if w.Timeout <= 0 {
		return errclass.New(errclass.Internal, "", errors.New("WaitStaticPodsCurrent needs a timeout"))
	}
	if w.Interval <= 0 {
		w.Interval = DefaultHealthInterval
	}
	if w.ForbiddenFor <= 0 {
		w.ForbiddenFor = DefaultForbiddenFor
	}
	deadline := time.Now().Add(w.Timeout)
	maxChecks := int(w.Timeout/w.Interval) + 1
	checks, forbidden := 0, 0
	var forbiddenSince time.Time // the first 403 of the run in a row
	last := errors.New("not checked")
	for checks < maxChecks && time.Now().Before(deadline) {
		checks++
		cctx, cancel := context.WithDeadline(ctx, deadline)
		err := staticPodsCurrent(cctx, w)
		// Cut short by the deadline: also a check that ended at it before
		// the context's timer fired, or that client-go's rate limiter
		// ended at once because its wait for a request would pass it (the
		// limiter says "would exceed context deadline" then, not the
		// context's error).
		cut := cctx.Err() != nil || !time.Now().Before(deadline) || (err != nil && strings.Contains(err.Error(), rateLimiterDeadline))
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !apierrors.IsForbidden(err) {
			forbidden = 0
		} else {
			if forbidden == 0 {
				forbiddenSince = time.Now()
			}
			if forbidden++; forbidden >= forbiddenChecks && time.Since(forbiddenSince) >= w.ForbiddenFor {
				return errclass.New(errclass.ControlPlaneUnhealthy,
					"The credential machineadm uses (the node's admin.conf) may not get nodes/proxy: grant it (kubeadm's admin credential has it through cluster-admin), then run machineadm upgrade again.",
					fmt.Errorf("%w (Node %s, %d checks in a row over %s): %w", ErrNodeProxyForbidden, w.Node, forbidden, time.Since(forbiddenSince).Round(100*time.Millisecond), err))
			}
		}
		if !cut || checks == 1 {
			// A check cut short by the deadline says less than the
			// one before it.
			last = err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(w.Interval):
		}
	}
	return errclass.New(errclass.ControlPlaneUnhealthy,
		"The kubelet did not run the control plane's current static pod manifests: check `crictl ps -a` and the kubelet's log (`journalctl -u kubelet`) on the node, then run machineadm upgrade again.",
		fmt.Errorf("the static pods %s on Node %s were not running their current manifests within %s (%d checks): %w",
			strings.Join(w.Components, ", "), w.Node, w.Timeout, checks, last))
}

// rateLimiterDeadline is in the error of a request that client-go's rate
// limiter (golang.org/x/time/rate) refused because its wait would pass the
// context's deadline.
const rateLimiterDeadline = "would exceed context deadline"

// staticPodsCurrent is one check of WaitStaticPodsCurrent: nil when every
// component's mirror pod carries the kubelet's hash and is Ready, else
// what is not (all components).
func staticPodsCurrent(ctx context.Context, w StaticPodsCurrent) error {
	hashes, err := KubeletStaticPodHashes(ctx, w.Client, w.Node)
	if err != nil {
		return err
	}
	var errs []string
	for _, c := range w.Components {
		name := StaticPodName(c, w.Node)
		want, ok := hashes[name]
		if !ok {
			errs = append(errs, "the kubelet runs no static pod "+name+" yet")
			continue
		}
		mirror, err := w.Client.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			errs = append(errs, fmt.Sprintf("mirror pod %s: %v", name, err))
			continue
		}
		if got := mirror.Annotations[ConfigHashAnnotation]; got != want {
			errs = append(errs, fmt.Sprintf("mirror pod %s has hash %s, the kubelet's manifest %s (the kubelet has not replaced the pod yet)", name, got, want))
			continue
		}
		if mirror.Status.Phase != v1.PodRunning || !podIsReady(mirror) {
			errs = append(errs, fmt.Sprintf("%s of hash %s is %s, not Ready yet", name, want, mirror.Status.Phase))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// KubeletStaticPodHashes are the hashes (kubernetes.io/config.hash) of the
// static pods the kubelet on node runs from its manifest directory (the
// pods of its /pods with kubernetes.io/config.source "file"), by pod name
// (COMPONENT-NODE). It asks the kubelet through the API server's node
// proxy (GET /api/v1/nodes/NODE/proxy/pods), which needs the nodes/proxy
// permission (the admin credential has it).
func KubeletStaticPodHashes(ctx context.Context, c clientset.Interface, node string) (map[string]string, error) {
	var list v1.PodList
	err := c.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "pods").Do(ctx).Into(&list)
	if err != nil {
		return nil, fmt.Errorf("the kubelet's pods on Node %s (through the API server's node proxy): %w", node, err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		if p.Annotations[configSourceAnnotation] == "file" && p.Annotations[ConfigHashAnnotation] != "" {
			out[p.Name] = p.Annotations[ConfigHashAnnotation]
		}
	}
	return out, nil
}

// StaticPodName is the name the kubelet gives component's static pod and
// its mirror pod on node (COMPONENT-NODE, the node name in lower case).
func StaticPodName(component, node string) string {
	return component + "-" + strings.ToLower(node)
}

func podIsReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
