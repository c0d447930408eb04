package controller

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// etcdView connects to the stacked etcd through the Machines' internal
// addresses and lists its members.
func (r *Reconciler) etcdView(ctx context.Context, cl *clusterv1.Cluster, machines []clusterv1.Machine) (EtcdClient, *etcdView, error) {
	var eps []string
	for _, m := range machines {
		for _, a := range m.Status.Addresses {
			if a.Type == clusterv1.MachineInternalIP {
				eps = append(eps, a.Address)
				break
			}
		}
	}
	dial := r.EtcdDialer
	if dial == nil {
		dial = DirectEtcdDialer
	}
	c, err := dial(ctx, r.Client, cl, eps)
	if err != nil {
		return nil, nil, err
	}
	ms, err := c.Members(ctx)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, &etcdView{Members: ms}, nil
}

// reconcilePreTerminate runs the pre-terminate hook of the one deleting
// Machine that holds it, once Cluster API waits on it (the Machine's
// Deleting condition, reason WaitingForPreTerminateHook, after drain): it
// removes the Machine's etcd member, when that keeps a healthy quorum,
// and then the hook annotation. done is true when the pass should end
// here.
func (r *Reconciler) reconcilePreTerminate(ctx context.Context, mcp *cpv1.MachineadmControlPlane, machines []clusterv1.Machine, etcd EtcdClient, v *etcdView) (ctrl.Result, bool, error) {
	var m *clusterv1.Machine
	for i := range machines {
		if !machines[i].DeletionTimestamp.IsZero() {
			if _, ok := machines[i].Annotations[PreTerminateHookAnnotation]; ok {
				m = &machines[i]
				break
			}
		}
	}
	if m == nil {
		return ctrl.Result{}, false, nil
	}
	c := meta.FindStatusCondition(m.Status.Conditions, clusterv1.MachineDeletingCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != clusterv1.MachineDeletingWaitingForPreTerminateHookReason || otherPreTerminateHooks(m) {
		return ctrl.Result{RequeueAfter: waitRequeue}, true, nil
	}
	if node := m.Status.NodeRef.Name; v != nil && node != "" && len(machines) > 1 {
		for _, mb := range v.Members {
			if mb.Name != node {
				continue
			}
			if ok, why := quorumAfterRemoval(v.Members, node); !ok {
				setCond(mcp, ScalingDownCondition, metav1.ConditionTrue, ReasonWaitingForQuorum, "Machine "+m.Name+" is held before its etcd member is removed: "+why)
				return ctrl.Result{RequeueAfter: waitRequeue}, true, nil
			}
			if err := etcd.RemoveMember(ctx, mb.ID); err != nil {
				return ctrl.Result{}, true, err
			}
			log.FromContext(ctx).Info("removed etcd member", "machine", m.Name, "member", mb.Name)
		}
	}
	patch := client.MergeFrom(m.DeepCopy())
	delete(m.Annotations, PreTerminateHookAnnotation)
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return ctrl.Result{}, true, err
	}
	return ctrl.Result{RequeueAfter: waitRequeue}, true, nil
}

// otherPreTerminateHooks: another component's hook must run first, while
// the kubelet and etcd still work.
func otherPreTerminateHooks(m *clusterv1.Machine) bool {
	for k := range m.Annotations {
		if strings.HasPrefix(k, clusterv1.PreTerminateDeleteHookAnnotationPrefix) && k != PreTerminateHookAnnotation {
			return true
		}
	}
	return false
}

// reconcileDelete deletes every Machine, lets their hooks go (the cluster
// is going away, etcd membership no longer matters) and removes the
// finalizer once none is left.
func (r *Reconciler) reconcileDelete(ctx context.Context, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster, machines []clusterv1.Machine) (ctrl.Result, error) {
	setCond(mcp, DeletingCondition, metav1.ConditionTrue, ReasonDeleting, fmt.Sprintf("deleting %d Machines", len(machines)))
	for i := range machines {
		m := &machines[i]
		if _, ok := m.Annotations[PreTerminateHookAnnotation]; ok {
			patch := client.MergeFrom(m.DeepCopy())
			delete(m.Annotations, PreTerminateHookAnnotation)
			if err := r.Client.Patch(ctx, m, patch); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
		}
		if m.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, m); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
		}
	}
	if len(machines) > 0 {
		return ctrl.Result{RequeueAfter: waitRequeue}, nil
	}
	return ctrl.Result{}, r.removeFinalizerWhenNoMachines(ctx, mcp, cl)
}

func (r *Reconciler) removeFinalizerWhenNoMachines(ctx context.Context, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster) error {
	if cl != nil {
		ms, err := r.machines(ctx, mcp, cl)
		if err != nil || len(ms) > 0 {
			return err
		}
	}
	if !controllerutil.ContainsFinalizer(mcp, Finalizer) {
		return nil
	}
	fin := mcp.DeepCopy()
	controllerutil.RemoveFinalizer(fin, Finalizer)
	if err := r.Client.Patch(ctx, fin, client.MergeFrom(mcp)); err != nil {
		return client.IgnoreNotFound(err)
	}
	mcp.Finalizers = fin.Finalizers
	return nil
}
