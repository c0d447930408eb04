package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// scalingReason is the decision's reason on a condition that is on (what
// is done next, or why it waits), else NotScaling.
func scalingReason(on bool, d decision) string {
	if on && d.Reason != "" {
		return d.Reason
	}
	return ReasonNotScaling
}

func rollingReason(on bool, d decision) string {
	if on && d.Reason != "" {
		return d.Reason
	}
	return ReasonNotRollingOut
}

// scalingMessage is the decision's message on the condition that is on:
// what is done next, or why it waits.
func scalingMessage(on bool, d decision) string {
	if !on {
		return ""
	}
	return d.Message
}

func (r *Reconciler) remediationCondition(mcp *cpv1.MachineadmControlPlane, st state, d decision) {
	unhealthy := false
	for _, m := range st.Machines {
		unhealthy = unhealthy || m.Unhealthy
	}
	switch {
	case !unhealthy:
		setCond(mcp, RemediatingCondition, metav1.ConditionFalse, ReasonNotRemediating, "")
	case d.Kind == actRemediate:
		setCond(mcp, RemediatingCondition, metav1.ConditionTrue, ReasonRemediating, d.Message)
	case d.Kind == actWait:
		// The wait's reason says why remediation does not go ahead.
		setCond(mcp, RemediatingCondition, metav1.ConditionTrue, d.Reason, d.Message)
	}
}

// updateCounts fills the contract's status fields from the Machines.
func (r *Reconciler) updateCounts(mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster, machines []clusterv1.Machine) {
	now := r.now()
	var ready, avail, upToDate int32
	var lowest *version.Version
	lowestStr := ""
	initialized := ptrTrue(mcp.Status.Initialization.ControlPlaneInitialized)
	for i := range machines {
		m := &machines[i]
		if meta.IsStatusConditionTrue(m.Status.Conditions, clusterv1.MachineReadyCondition) {
			ready++
		}
		if meta.IsStatusConditionTrue(m.Status.Conditions, clusterv1.MachineAvailableCondition) {
			avail++
		}
		if m.DeletionTimestamp.IsZero() && outdatedReason(mcp, m, now) == "" {
			upToDate++
		}
		if m.Status.NodeRef.Name != "" {
			initialized = true
		}
		if v, err := version.ParseSemantic(m.Spec.Version); err == nil && (lowest == nil || v.LessThan(lowest)) {
			lowest, lowestStr = v, m.Spec.Version
		}
	}
	mcp.Status.Versions = statusVersions(machines)
	n := int32(len(machines))
	mcp.Status.Replicas, mcp.Status.ReadyReplicas, mcp.Status.AvailableReplicas, mcp.Status.UpToDateReplicas = &n, &ready, &avail, &upToDate
	mcp.Status.Selector = labels.SelectorFromSet(selectorFor(mcp, cl.Name)).String()
	mcp.Status.Version = lowestStr
	if initialized {
		mcp.Status.Initialization.ControlPlaneInitialized = ptr(true)
	}
	setCond(mcp, MachinesReadyCondition, boolStatus(ready == n), readyReason(ready == n), fmt.Sprintf("%d of %d Machines Ready", ready, n))
	if upToDate == n {
		setCond(mcp, MachinesUpToDateCondition, metav1.ConditionTrue, ReasonUpToDate, "")
	} else {
		var why []string
		for i := range machines {
			if r := outdatedReason(mcp, &machines[i], now); r != "" {
				why = append(why, machines[i].Name+": "+r)
			}
		}
		setCond(mcp, MachinesUpToDateCondition, metav1.ConditionFalse, ReasonNotUpToDate, strings.Join(why, "; "))
	}
}

func readyReason(ok bool) string {
	if ok {
		return ReasonReady
	}
	return ReasonNotReady
}

// availability sets Available: initialised, at least one Machine Ready
// and etcd with a healthy quorum (or external).
func (r *Reconciler) availability(mcp *cpv1.MachineadmControlPlane, st state) {
	ready := 0
	for _, m := range st.Machines {
		if m.Ready && !m.Deleting {
			ready++
		}
	}
	quorum := true
	if st.Etcd != nil {
		ok, _ := quorumAfterRemoval(st.Etcd.Members, "")
		quorum = ok
	}
	switch {
	case !st.Initialized:
		setCond(mcp, AvailableCondition, metav1.ConditionFalse, ReasonWaitingForInitialization, "the control plane is not initialised yet")
	case ready == 0:
		setCond(mcp, AvailableCondition, metav1.ConditionFalse, ReasonNotAvailable, "no control-plane Machine is Ready")
	case !quorum:
		setCond(mcp, AvailableCondition, metav1.ConditionFalse, ReasonWaitingForQuorum, "etcd has no healthy quorum")
	default:
		setCond(mcp, AvailableCondition, metav1.ConditionTrue, ReasonAvailable, "")
	}
}

func (r *Reconciler) etcdConditions(mcp *cpv1.MachineadmControlPlane, v *etcdView) {
	var bad []string
	for _, m := range v.Members {
		if !m.Healthy {
			bad = append(bad, fmt.Sprintf("%s (%x)", m.Name, m.ID))
		}
	}
	if len(bad) == 0 {
		setCond(mcp, EtcdClusterHealthyCondition, metav1.ConditionTrue, ReasonEtcdHealthy, fmt.Sprintf("%d members", len(v.Members)))
		return
	}
	setCond(mcp, EtcdClusterHealthyCondition, metav1.ConditionFalse, ReasonEtcdUnhealthy, "unhealthy members: "+strings.Join(bad, ", "))
}

// noteRemediationWait sets the unhealthy Machine's OwnerRemediated
// condition (False) to the wait's reason and message.
func (r *Reconciler) noteRemediationWait(ctx context.Context, ns string, d decision) error {
	m := &clusterv1.Machine{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: d.Machine}, m); err != nil {
		return client.IgnoreNotFound(err)
	}
	c := meta.FindStatusCondition(m.Status.Conditions, clusterv1.MachineOwnerRemediatedCondition)
	if c != nil && c.Reason == d.Reason && c.Message == d.Message {
		return nil
	}
	patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: clusterv1.MachineOwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: d.Reason, Message: d.Message, ObservedGeneration: m.Generation})
	return ignoreStale(r.Client.Status().Patch(ctx, m, patch))
}

// ignoreStale drops the errors of a Machine status patch made from a
// stale (cached) copy: a merge patch replaces the whole conditions list,
// so it carries the copy's resourceVersion and the API server refuses it
// when the Machine changed since (Cluster API's Machine controller writes
// the same list); the next pass patches again from the new copy.
func ignoreStale(err error) error {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// syncUpToDate sets the Machine's UpToDate condition (control-plane
// contract: the owner sets it).
func (r *Reconciler) syncUpToDate(ctx context.Context, mcp *cpv1.MachineadmControlPlane, m *clusterv1.Machine) error {
	why := outdatedReason(mcp, m, r.now())
	want := metav1.Condition{Type: clusterv1.MachineUpToDateCondition, Status: metav1.ConditionTrue, Reason: ReasonUpToDate, ObservedGeneration: m.Generation}
	if why != "" {
		want.Status, want.Reason, want.Message = metav1.ConditionFalse, ReasonNotUpToDate, why
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, want.Type); c != nil && c.Status == want.Status && c.Message == want.Message {
		return nil
	}
	patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
	meta.SetStatusCondition(&m.Status.Conditions, want)
	return ignoreStale(r.Client.Status().Patch(ctx, m, patch))
}

// reportOutcomes aggregates the Machines' machineadm outcomes into
// MachinesBootstrapped.
func (r *Reconciler) reportOutcomes(ctx context.Context, mcp *cpv1.MachineadmControlPlane, machines []clusterv1.Machine) error {
	if len(machines) == 0 {
		setCond(mcp, MachinesBootstrappedCondition, metav1.ConditionUnknown, ReasonWaitingForBootstrap, "no Machines yet")
		return nil
	}
	outs := make([]machineOutcome, 0, len(machines))
	for _, m := range machines {
		o := machineOutcome{Machine: m.Name}
		cfg := &bootstrapv1.MachineadmConfig{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg)
		switch {
		case err == nil:
			o.Config = cfg
		case !apierrors.IsNotFound(err):
			return err
		}
		outs = append(outs, o)
	}
	s, reason, msg := aggregateOutcomes(outs)
	setCond(mcp, MachinesBootstrappedCondition, s, reason, msg)
	return nil
}

// patchStatus writes the status when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, before, after *cpv1.MachineadmControlPlane) error {
	after.Status.ObservedGeneration = after.Generation
	if equality.Semantic.DeepEqual(before.Status, after.Status) {
		return nil
	}
	base := before.DeepCopy()
	base.ResourceVersion = after.ResourceVersion
	st := after.DeepCopy()
	if err := r.Client.Status().Patch(ctx, st, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// statusVersions counts the Machines per version, oldest version first;
// nil without Machines. Unparsable versions sort last, by name.
func statusVersions(machines []clusterv1.Machine) []clusterv1.StatusVersion {
	count := map[string]int32{}
	for i := range machines {
		if v := machines[i].Spec.Version; v != "" {
			count[v]++
		}
	}
	if len(count) == 0 {
		return nil
	}
	out := make([]clusterv1.StatusVersion, 0, len(count))
	for v, n := range count {
		out = append(out, clusterv1.StatusVersion{Version: v, Replicas: n})
	}
	sort.Slice(out, func(i, j int) bool {
		a, errA := version.ParseSemantic(out[i].Version)
		b, errB := version.ParseSemantic(out[j].Version)
		switch {
		case errA == nil && errB == nil && !a.EqualTo(b):
			return a.LessThan(b)
		case (errA == nil) != (errB == nil):
			return errA == nil
		}
		return out[i].Version < out[j].Version
	})
	return out
}
