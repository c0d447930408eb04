package controller

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/distribution/reference"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// kube-proxy follows the control plane's version, as kubeadm's `upgrade
// apply` (its addon/kube-proxy phase) and Cluster API's kubeadm
// control-plane provider move it: kubeadm installs the kube-proxy
// DaemonSet once, at init, with the image of the init's version, and a
// control-plane join never touches it again. Replacing every Machine
// with a newer one would otherwise leave kube-proxy behind.

// SkipKubeProxyAnnotation on a MachineadmControlPlane (any value, even
// empty) keeps the controller's hands off the workload cluster's
// kube-proxy DaemonSet. The name is the kubeadm control-plane provider's,
// so that an operator's habit carries over.
const SkipKubeProxyAnnotation = "controlplane.cluster.x-k8s.io/skip-kube-proxy"

// kubeProxyName is kubeadm's name for the DaemonSet in kube-system and for
// its container.
const kubeProxyName = "kube-proxy"

// KubeProxyUpToDateCondition says whether the workload cluster's
// kube-system/kube-proxy DaemonSet runs the image of spec.version: True
// (reason UpToDate, or KubeProxyNotInstalled when there is no such
// DaemonSet); False while a control-plane Machine still runs an older
// version (WaitingForControlPlaneVersion), when the image cannot be
// retagged (KubeProxyImageUnsupported) or the update failed
// (KubeProxyUpdateFailed, retried); with WaitingForStableControlPlane
// when every Machine runs spec.version but the control plane still
// changes or waits (a Machine not Ready, etcd unhealthy, a remediation)
// before kube-proxy was set (False) or checked against this generation of
// the spec (Unknown); Unknown with SkippedByAnnotation.
const KubeProxyUpToDateCondition = "KubeProxyUpToDate"

// Reasons of KubeProxyUpToDateCondition (besides ReasonUpToDate).
const (
	ReasonKubeProxyNotInstalled         = "KubeProxyNotInstalled"
	ReasonKubeProxySkipped              = "SkippedByAnnotation"
	ReasonWaitingForControlPlaneVersion = "WaitingForControlPlaneVersion"
	ReasonWaitingForStableControlPlane  = "WaitingForStableControlPlane"
	ReasonKubeProxyImageUnsupported     = "KubeProxyImageUnsupported"
	ReasonKubeProxyUpdateFailed         = "KubeProxyUpdateFailed"
)

// errKubeProxyImage marks a DaemonSet whose kube-proxy image cannot be
// retagged (a digest, no container of that name, an invalid reference): a
// retry cannot cure it, the user must.
var errKubeProxyImage = errors.New("kube-proxy image cannot be retagged")

// kubeProxyResult is what updateKubeProxy found and did.
type kubeProxyResult struct {
	// Absent: there is no kube-system/kube-proxy DaemonSet (kube-proxy
	// disabled, or replaced by a CNI).
	Absent bool
	// From and To are the container's image before and after.
	From, To string
	// Patched: the DaemonSet was changed.
	Patched bool
}

// notTagChars are the characters an image tag may not hold; kubeadm's
// KubernetesVersionToImageTag turns a version's "+" into "_" alike.
var notTagChars = regexp.MustCompile(`[^-a-zA-Z0-9_.]`)

// kubeProxyImage returns image (a container image reference as the
// DaemonSet writes it) with its tag set to version's (the version with
// every character a tag may not hold turned into "_"), its repository
// and name kept as written. An image pinned by digest, or one that does
// not parse, is an error wrapping errKubeProxyImage.
func kubeProxyImage(image, version string) (string, error) {
	ref, err := reference.Parse(image)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", errKubeProxyImage, image, err)
	}
	named, ok := ref.(reference.Named)
	if !ok {
		return "", fmt.Errorf("%w: %q names no repository", errKubeProxyImage, image)
	}
	if _, ok := ref.(reference.Digested); ok {
		return "", fmt.Errorf("%w: %q is pinned by digest; set the image by hand or remove the digest", errKubeProxyImage, image)
	}
	tagged, err := reference.WithTag(reference.TrimNamed(named), notTagChars.ReplaceAllString(version, "_"))
	if err != nil {
		return "", fmt.Errorf("%w: tag for version %q: %v", errKubeProxyImage, version, err)
	}
	return tagged.String(), nil
}

// updateKubeProxy sets the image tag of the kube-proxy container of the
// workload cluster's kube-system/kube-proxy DaemonSet to version, with a
// strategic merge patch of that one container, only when it differs.
// A missing DaemonSet is no error (Absent); an image that cannot be
// retagged is an error wrapping errKubeProxyImage; API errors are
// returned as they are.
func updateKubeProxy(ctx context.Context, wc client.Client, version string) (kubeProxyResult, error) {
	ds := &appsv1.DaemonSet{}
	if err := wc.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: kubeProxyName}, ds); err != nil {
		if apierrors.IsNotFound(err) {
			return kubeProxyResult{Absent: true}, nil
		}
		return kubeProxyResult{}, fmt.Errorf("DaemonSet %s/%s: %w", metav1.NamespaceSystem, kubeProxyName, err)
	}
	before := ds.DeepCopy()
	c := -1
	for i := range ds.Spec.Template.Spec.Containers {
		if ds.Spec.Template.Spec.Containers[i].Name == kubeProxyName {
			c = i
			break
		}
	}
	if c < 0 {
		return kubeProxyResult{}, fmt.Errorf("%w: DaemonSet %s/%s has no container named %s", errKubeProxyImage, metav1.NamespaceSystem, kubeProxyName, kubeProxyName)
	}
	res := kubeProxyResult{From: ds.Spec.Template.Spec.Containers[c].Image}
	to, err := kubeProxyImage(res.From, version)
	if err != nil {
		return res, err
	}
	res.To = to
	if to == res.From {
		return res, nil
	}
	ds.Spec.Template.Spec.Containers[c].Image = to
	if err := wc.Patch(ctx, ds, client.StrategicMergeFrom(before)); err != nil {
		return res, fmt.Errorf("patching DaemonSet %s/%s's image to %s: %w", metav1.NamespaceSystem, kubeProxyName, to, err)
	}
	res.Patched = true
	return res, nil
}

// syncKubeProxy brings the workload cluster's kube-proxy to spec.version.
// Call it only when every control-plane Machine is up to date and Ready
// (decide returned actNone): kube-proxy must never be newer than any
// kube-apiserver (the version skew policy). It records the outcome in
// KubeProxyUpToDateCondition. Its error, for failures a retry may cure
// (the workload cluster unreachable, an API error), goes back to the
// controller's backoff; an image it cannot retag is only a condition.
func (r *Reconciler) syncKubeProxy(ctx context.Context, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster) error {
	if kubeProxySkipped(mcp) {
		return nil
	}
	c, err := r.workload(ctx, cl)
	if err != nil {
		setCond(mcp, KubeProxyUpToDateCondition, metav1.ConditionFalse, ReasonKubeProxyUpdateFailed, "reaching the workload cluster: "+err.Error())
		return fmt.Errorf("reaching the workload cluster to set kube-proxy's version %s: %w", mcp.Spec.Version, err)
	}
	res, err := updateKubeProxy(ctx, c, mcp.Spec.Version)
	switch {
	case errors.Is(err, errKubeProxyImage):
		setCond(mcp, KubeProxyUpToDateCondition, metav1.ConditionFalse, ReasonKubeProxyImageUnsupported, err.Error())
		return nil
	case err != nil:
		setCond(mcp, KubeProxyUpToDateCondition, metav1.ConditionFalse, ReasonKubeProxyUpdateFailed, err.Error())
		return fmt.Errorf("setting kube-proxy's version %s: %w", mcp.Spec.Version, err)
	case res.Absent:
		setCond(mcp, KubeProxyUpToDateCondition, metav1.ConditionTrue, ReasonKubeProxyNotInstalled, "the workload cluster has no DaemonSet kube-system/kube-proxy: nothing to update")
	case res.Patched:
		log.FromContext(ctx).Info("kube-proxy DaemonSet now runs the control plane's version", "version", mcp.Spec.Version, "from", res.From, "to", res.To)
		setCond(mcp, KubeProxyUpToDateCondition, metav1.ConditionTrue, ReasonUpToDate, "kube-proxy's image set to "+res.To+" (was "+res.From+")")
	default:
		setCond(mcp, KubeProxyUpToDateCondition, metav1.ConditionTrue, ReasonUpToDate, "kube-proxy runs "+res.To)
	}
	return nil
}

// kubeProxyWaits records, while the control plane changes or waits
// (decision d), that kube-proxy waits for the Machines still below
// spec.version. With none below (a scale-up, a spec rollout at the same
// version, a wait for a Machine to become Ready or for etcd) the last
// sync's outcome is kept only when it is current: one that still names
// Machines below spec.version (they are gone now, kube-proxy has not
// moved yet) becomes False, and one a sync recorded for an older
// generation of the spec becomes Unknown, both with reason
// WaitingForStableControlPlane and d's message, until the next sync.
func kubeProxyWaits(mcp *cpv1.MachineadmControlPlane, st state, d decision) {
	if kubeProxySkipped(mcp) {
		return
	}
	var behind []string
	for _, m := range st.Machines {
		if m.Version != mcp.Spec.Version {
			behind = append(behind, m.Name+" ("+m.Version+")")
		}
	}
	if len(behind) == 0 {
		c := meta.FindStatusCondition(mcp.Status.Conditions, KubeProxyUpToDateCondition)
		if c == nil {
			return
		}
		why := d.Message
		if why == "" {
			why = d.Reason
		}
		msg := "kube-proxy is set to " + mcp.Spec.Version + " once every control-plane Machine is up to date and Ready; now: " + why
		switch {
		case c.Reason == ReasonWaitingForControlPlaneVersion:
			setCond(mcp, KubeProxyUpToDateCondition, metav1.ConditionFalse, ReasonWaitingForStableControlPlane, msg)
		case c.ObservedGeneration != mcp.Generation:
			setCond(mcp, KubeProxyUpToDateCondition, metav1.ConditionUnknown, ReasonWaitingForStableControlPlane, msg)
		}
		return
	}
	sort.Strings(behind)
	setCond(mcp, KubeProxyUpToDateCondition, metav1.ConditionFalse, ReasonWaitingForControlPlaneVersion,
		"kube-proxy moves to "+mcp.Spec.Version+" once every control-plane Machine runs it (kube-proxy must not be newer than kube-apiserver); still at another version: "+strings.Join(behind, ", "))
}

// kubeProxySkipped reports whether mcp carries SkipKubeProxyAnnotation and,
// when it does, records that in KubeProxyUpToDateCondition (Unknown,
// SkippedByAnnotation).
func kubeProxySkipped(mcp *cpv1.MachineadmControlPlane) bool {
	if _, skip := mcp.Annotations[SkipKubeProxyAnnotation]; !skip {
		return false
	}
	setCond(mcp, KubeProxyUpToDateCondition, metav1.ConditionUnknown, ReasonKubeProxySkipped, "annotation "+SkipKubeProxyAnnotation+" is set: the kube-proxy DaemonSet is left as it is")
	return true
}
