package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// Annotations the controller keeps on its Machines.
const (
	// SpecHashAnnotation is the hash of the machine spec
	// (machineadmConfigSpec) the Machine was made from.
	SpecHashAnnotation = "controlplane.machineadm.io/spec-hash"
	// InfrastructureTemplateAnnotation is "<apiGroup>/<kind>/<name>" of
	// the infrastructure template the Machine was cloned from.
	InfrastructureTemplateAnnotation = "controlplane.machineadm.io/infrastructure-template"
	// PreTerminateHookAnnotation holds a control-plane Machine's
	// infrastructure until the controller has removed its etcd member
	// (Cluster API's pre-terminate delete hook; the kubeadm control-plane
	// provider uses ".../kcp-cleanup").
	PreTerminateHookAnnotation = clusterv1.PreTerminateDeleteHookAnnotationPrefix + "/machineadm-cleanup"
)

// specHash is the hash of what the machines are made from, besides the
// version and the infrastructure template: the MachineadmConfig spec
// (the runtime included). First 16 hex digits of a SHA-256 over its JSON.
func specHash(mcp *cpv1.MachineadmControlPlane) string {
	b, _ := json.Marshal(mcp.Spec.MachineadmConfigSpec)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

func infraTemplateKey(r clusterv1.ContractVersionedObjectReference) string {
	return r.APIGroup + "/" + r.Kind + "/" + r.Name
}

// outdatedReason says why Machine m is not up to date with mcp, "" when
// it is.
func outdatedReason(mcp *cpv1.MachineadmControlPlane, m *clusterv1.Machine, now time.Time) string {
	switch {
	case m.Spec.Version != mcp.Spec.Version:
		return "version " + m.Spec.Version + ", want " + mcp.Spec.Version
	case m.Annotations[SpecHashAnnotation] != specHash(mcp):
		return "machine spec changed"
	case m.Annotations[InfrastructureTemplateAnnotation] != infraTemplateKey(mcp.Spec.MachineTemplate.Spec.InfrastructureRef):
		return "infrastructure template changed"
	}
	if a := mcp.Spec.Rollout.After; !a.IsZero() && !a.After(now) && m.CreationTimestamp.Before(&a) {
		return "created before rollout.after " + a.UTC().Format(time.RFC3339)
	}
	if d := mcp.Spec.Rollout.Before.CertificatesExpiryDays; d > 0 {
		if exp := m.Status.CertificatesExpiryDate; !exp.IsZero() && exp.Sub(now) < time.Duration(d)*24*time.Hour {
			return fmt.Sprintf("certificates expire %s, within %d days", exp.UTC().Format(time.RFC3339), d)
		}
	}
	return ""
}

// info is the decisions' view of a Machine.
func info(mcp *cpv1.MachineadmControlPlane, m *clusterv1.Machine, now time.Time) machineInfo {
	hc := meta.FindStatusCondition(m.Status.Conditions, clusterv1.MachineHealthCheckSucceededCondition)
	or := meta.FindStatusCondition(m.Status.Conditions, clusterv1.MachineOwnerRemediatedCondition)
	fd := m.Spec.FailureDomain
	if fd == "" {
		fd = m.Status.FailureDomain
	}
	return machineInfo{
		Name:          m.Name,
		Created:       m.CreationTimestamp.Time,
		FailureDomain: fd,
		Deleting:      !m.DeletionTimestamp.IsZero(),
		UpToDate:      outdatedReason(mcp, m, now) == "",
		Ready:         meta.IsStatusConditionTrue(m.Status.Conditions, clusterv1.MachineReadyCondition),
		Node:          m.Status.NodeRef.Name,
		Version:       m.Spec.Version,
		Unhealthy:     hc != nil && hc.Status == metav1.ConditionFalse && or != nil && or.Status == metav1.ConditionFalse,
	}
}

// machineLabels are the labels of every object the control plane makes
// for a Machine.
func machineLabels(mcp *cpv1.MachineadmControlPlane, cluster string) map[string]string {
	l := map[string]string{}
	for k, v := range mcp.Spec.MachineTemplate.ObjectMeta.Labels {
		l[k] = v
	}
	l[clusterv1.ClusterNameLabel] = cluster
	l[clusterv1.MachineControlPlaneLabel] = ""
	l[clusterv1.MachineControlPlaneNameLabel] = mcp.Name
	return l
}

// selectorFor is the control plane's Machine selector.
func selectorFor(mcp *cpv1.MachineadmControlPlane, cluster string) map[string]string {
	return map[string]string{
		clusterv1.ClusterNameLabel:             cluster,
		clusterv1.MachineControlPlaneLabel:     "",
		clusterv1.MachineControlPlaneNameLabel: mcp.Name,
	}
}

// createMachine clones the infrastructure template, makes the
// MachineadmConfig and the Machine, all named "<mcp>-<5 random>", all
// controlled by the control plane until Cluster API's Machine controller
// takes over the infrastructure machine and the config. On a failure
// after the first object it deletes what it made.
func (r *Reconciler) createMachine(ctx context.Context, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster, failureDomain string) (string, error) {
	name := mcp.Name + "-" + utilrand.String(5)
	labels := machineLabels(mcp, cl.Name)
	ref := mcp.Spec.MachineTemplate.Spec.InfrastructureRef
	infra, err := r.cloneInfrastructure(ctx, mcp, cl, ref, name, labels)
	if err != nil {
		return "", err
	}
	cfg := &bootstrapv1.MachineadmConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: mcp.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{controllerRef(mcp)},
		},
		Spec: *mcp.Spec.MachineadmConfigSpec.DeepCopy(),
	}
	if err := r.Client.Create(ctx, cfg); err != nil {
		_ = r.Client.Delete(ctx, infra)
		return "", fmt.Errorf("creating MachineadmConfig %s: %w", name, err)
	}
	annotations := map[string]string{}
	for k, v := range mcp.Spec.MachineTemplate.ObjectMeta.Annotations {
		annotations[k] = v
	}
	annotations[SpecHashAnnotation] = specHash(mcp)
	annotations[InfrastructureTemplateAnnotation] = infraTemplateKey(ref)
	annotations[PreTerminateHookAnnotation] = ""
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: mcp.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{controllerRef(mcp)},
		},
		Spec: clusterv1.MachineSpec{
			ClusterName: cl.Name,
			Version:     mcp.Spec.Version,
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: bootstrapv1.GroupVersion.Group, Kind: "MachineadmConfig", Name: name,
			}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: ref.APIGroup, Kind: infra.GetKind(), Name: name,
			},
			FailureDomain: failureDomain,
			Deletion:      machineDeletion(mcp),
		},
	}
	if err := r.Client.Create(ctx, m); err != nil {
		_ = r.Client.Delete(ctx, infra)
		_ = r.Client.Delete(ctx, cfg)
		return "", fmt.Errorf("creating Machine %s: %w", name, err)
	}
	return name, nil
}

func machineDeletion(mcp *cpv1.MachineadmControlPlane) clusterv1.MachineDeletionSpec {
	d := mcp.Spec.MachineTemplate.Spec.Deletion
	return clusterv1.MachineDeletionSpec{
		NodeDrainTimeoutSeconds:        d.NodeDrainTimeoutSeconds,
		NodeVolumeDetachTimeoutSeconds: d.NodeVolumeDetachTimeoutSeconds,
		NodeDeletionTimeoutSeconds:     d.NodeDeletionTimeoutSeconds,
	}
}

// cloneInfrastructure creates the infrastructure machine from the
// template's spec.template (kind without the "Template" suffix, the
// version the API server prefers for the group), with Cluster API's
// cloned-from annotations. The template itself gets the Cluster as an
// owner (ensureClusterOwner), as the kubeadm control-plane provider does,
// so that it goes with the Cluster.
func (r *Reconciler) cloneInfrastructure(ctx context.Context, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster, ref clusterv1.ContractVersionedObjectReference, name string, labels map[string]string) (*unstructured.Unstructured, error) {
	mapping, err := r.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if err != nil {
		return nil, fmt.Errorf("spec.machineTemplate.spec.infrastructureRef: %w", err)
	}
	tpl := &unstructured.Unstructured{}
	tpl.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: mcp.Namespace, Name: ref.Name}, tpl); err != nil {
		return nil, fmt.Errorf("spec.machineTemplate.spec.infrastructureRef: %s %s: %w", ref.Kind, ref.Name, err)
	}
	if err := r.ensureClusterOwner(ctx, tpl, cl); err != nil {
		return nil, fmt.Errorf("%s %s: making Cluster %s its owner: %w", ref.Kind, ref.Name, cl.Name, err)
	}
	spec, _, err := unstructured.NestedMap(tpl.Object, "spec", "template", "spec")
	if err != nil {
		return nil, fmt.Errorf("%s %s: spec.template.spec: %w", ref.Kind, ref.Name, err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	if spec != nil {
		obj.Object["spec"] = spec
	}
	obj.SetAPIVersion(mapping.GroupVersionKind.GroupVersion().String())
	obj.SetKind(strings.TrimSuffix(ref.Kind, "Template"))
	obj.SetNamespace(mcp.Namespace)
	obj.SetName(name)
	l := map[string]string{}
	tl, _, _ := unstructured.NestedStringMap(tpl.Object, "spec", "template", "metadata", "labels")
	for k, v := range tl {
		l[k] = v
	}
	for k, v := range labels {
		l[k] = v
	}
	obj.SetLabels(l)
	a, _, _ := unstructured.NestedStringMap(tpl.Object, "spec", "template", "metadata", "annotations")
	if a == nil {
		a = map[string]string{}
	}
	a[clusterv1.TemplateClonedFromNameAnnotation] = ref.Name
	a[clusterv1.TemplateClonedFromGroupKindAnnotation] = ref.Kind + "." + ref.APIGroup
	obj.SetAnnotations(a)
	obj.SetOwnerReferences([]metav1.OwnerReference{controllerRef(mcp)})
	if err := r.Client.Create(ctx, obj); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("%s %s exists already: %w", obj.GetKind(), name, err)
		}
		return nil, fmt.Errorf("creating %s %s: %w", obj.GetKind(), name, err)
	}
	return obj, nil
}

// ensureClusterOwner adds the Cluster to obj's owner references (not as
// controller) when it is not there: the infrastructure machine template
// a MachineadmControlPlane names is then garbage-collected with the
// Cluster instead of staying behind, as the kubeadm control-plane
// provider arranges for its templates. ClusterClass templates, which the
// topology controller owns already, are left as they are.
func (r *Reconciler) ensureClusterOwner(ctx context.Context, obj *unstructured.Unstructured, cl *clusterv1.Cluster) error {
	for _, o := range obj.GetOwnerReferences() {
		if o.UID == cl.UID {
			return nil
		}
	}
	before := obj.DeepCopy()
	obj.SetOwnerReferences(append(obj.GetOwnerReferences(), metav1.OwnerReference{
		APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cl.Name, UID: cl.UID,
	}))
	return r.Client.Patch(ctx, obj, client.MergeFrom(before))
}

// syncInPlace brings a Machine's labels, annotations and deletion
// timeouts to the template without a rollout (control-plane contract:
// metadata and deletion settings propagate in place).
func (r *Reconciler) syncInPlace(ctx context.Context, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster, m *clusterv1.Machine) error {
	want := m.DeepCopy()
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	for k, v := range machineLabels(mcp, cl.Name) {
		want.Labels[k] = v
	}
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	for k, v := range mcp.Spec.MachineTemplate.ObjectMeta.Annotations {
		want.Annotations[k] = v
	}
	if m.DeletionTimestamp.IsZero() {
		want.Annotations[PreTerminateHookAnnotation] = ""
	}
	want.Spec.Deletion = machineDeletion(mcp)
	if equalMachine(m, want) {
		return nil
	}
	return r.Client.Patch(ctx, want, client.MergeFrom(m))
}

func equalMachine(a, b *clusterv1.Machine) bool {
	ja, _ := json.Marshal([]any{a.Labels, a.Annotations, a.Spec.Deletion})
	jb, _ := json.Marshal([]any{b.Labels, b.Annotations, b.Spec.Deletion})
	return string(ja) == string(jb)
}
