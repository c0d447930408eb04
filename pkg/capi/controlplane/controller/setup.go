package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// SetupWithManager registers the reconciler: it watches
// MachineadmControlPlanes, the Machines they control and the Clusters that
// refer to them (spec.controlPlaneRef).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machineadmcontrolplane").
		For(&cpv1.MachineadmControlPlane{}).
		Owns(&clusterv1.Machine{}).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(clusterToControlPlane)).
		WithOptions(opts).
		Complete(r)
}

func clusterToControlPlane(_ context.Context, o client.Object) []reconcile.Request {
	cl, ok := o.(*clusterv1.Cluster)
	if !ok {
		return nil
	}
	ref := cl.Spec.ControlPlaneRef
	if ref.Kind != "MachineadmControlPlane" || ref.APIGroup != cpv1.GroupVersion.Group || ref.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: cl.Namespace, Name: ref.Name}}}
}
