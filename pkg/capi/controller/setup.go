package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// SetupWithManager registers the reconciler: it watches MachineadmConfigs,
// the Machines that own them (through spec.bootstrap.configRef) and the
// Clusters they belong to.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&bootstrapv1.MachineadmConfig{}).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(machineToConfig)).
		Watches(&clusterv1.MachinePool{}, handler.EnqueueRequestsFromMapFunc(poolToConfig)).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToConfigs)).
		WithOptions(opts).
		Complete(r)
}

func machineToConfig(_ context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*clusterv1.Machine)
	if !ok {
		return nil
	}
	ref := m.Spec.Bootstrap.ConfigRef
	if ref.Kind != "MachineadmConfig" || ref.APIGroup != bootstrapv1.GroupVersion.Group || ref.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}}}
}

// clusterToConfigs maps a Cluster to the MachineadmConfigs of its
// Machines (Cluster API labels every Machine with its Cluster's name; a
// config need not carry that label), and to configs that carry the label
// but whose Machine is not there yet.
func (r *Reconciler) clusterToConfigs(ctx context.Context, o client.Object) []reconcile.Request {
	seen := map[client.ObjectKey]bool{}
	var out []reconcile.Request
	add := func(key client.ObjectKey) {
		if !seen[key] {
			seen[key] = true
			out = append(out, reconcile.Request{NamespacedName: key})
		}
	}
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(o.GetNamespace()), client.MatchingLabels{clusterv1.ClusterNameLabel: o.GetName()}); err == nil {
		for i := range machines.Items {
			for _, req := range machineToConfig(ctx, &machines.Items[i]) {
				add(req.NamespacedName)
			}
		}
	}
	list := &bootstrapv1.MachineadmConfigList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{clusterv1.ClusterNameLabel: o.GetName()}); err == nil {
		for i := range list.Items {
			add(client.ObjectKeyFromObject(&list.Items[i]))
		}
	}
	return out
}
