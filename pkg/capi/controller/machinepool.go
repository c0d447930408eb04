package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// A MachineadmConfig owned by a MachinePool is the bootstrap data of every
// instance of the pool, as Cluster API's kubeadm provider does it for
// KubeadmConfigs: one data Secret, rendered as a worker join (pools are
// workers), that instances boot from whenever the pool scales. Its join
// token must stay valid for instances made at any time: when less than a
// third of its TTL is left (or it was deleted) a new token is made and the
// same data Secret is written again (condition reason TokenRotated); the
// old token expires by itself, so an instance booting from the old data
// meanwhile still joins. Outcomes are not mirrored: a pool has many Nodes.

// ReasonTokenRotated is the Ready and DataSecretAvailable reason of a
// pool's config whose token was rotated and data written again.
const ReasonTokenRotated = "TokenRotated"

// ownerPool returns the MachinePool of Cluster API's group that owns cfg,
// or nil.
func (r *Reconciler) ownerPool(ctx context.Context, cfg *bootstrapv1.MachineadmConfig) (*clusterv1.MachinePool, error) {
	for _, o := range cfg.OwnerReferences {
		if o.Kind != "MachinePool" {
			continue
		}
		if g, err := schemaGroup(o.APIVersion); err != nil || g != clusterv1.GroupVersion.Group {
			continue
		}
		p := &clusterv1.MachinePool{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: o.Name}, p)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return p, err
	}
	return nil, nil
}

// poolMachineAnnotation marks, in memory only, the Machine poolMachine
// makes; it is never written to the API server.
const poolMachineAnnotation = "bootstrap.machineadm.io/machine-pool"

// isPoolMachine reports whether m stands for a MachinePool's instances
// (poolMachine).
func isPoolMachine(m *clusterv1.Machine) bool {
	return m.Annotations[poolMachineAnnotation] == "true"
}

// poolMachine is the Machine the data of pool's instances is rendered
// for: the pool's name (the token's label and description), Cluster and
// version; no control-plane label.
func poolMachine(p *clusterv1.MachinePool) *clusterv1.Machine {
	return &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Annotations: map[string]string{poolMachineAnnotation: "true"}},
		Spec: clusterv1.MachineSpec{
			ClusterName: p.Spec.ClusterName,
			Version:     p.Spec.Template.Spec.Version,
		},
	}
}

// VersionAnnotation holds, on a data Secret, the Kubernetes version its
// data was rendered for (the Machine's or the MachinePool's
// spec.version).
const VersionAnnotation = "bootstrap.machineadm.io/kubernetes-version"

// reconcilePoolAfterData keeps a pool's data Secret usable: it rotates the
// token (a new one, the data written again) when less than a third of the
// TTL is left or it is gone, or the pool's version is no longer the one
// the data was rendered for, and looks again every sixth of the TTL.
func (r *Reconciler) reconcilePoolAfterData(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, cl *clusterv1.Cluster) (ctrl.Result, error) {
	ds := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: cfg.Status.DataSecretName}, ds); err != nil {
		if apierrors.IsNotFound(err) {
			// Instances keep booting from it: make it again.
			cfg.Status.Initialization.DataSecretCreated = nil
			return r.renderData(ctx, cfg, m, cl, nil)
		}
		return ctrl.Result{}, err
	}
	wc, err := r.workloadClient(ctx, cl)
	if err != nil {
		return r.secretErr(cfg, err)
	}
	left, err := tokenLifetimeLeft(ctx, wc, ds.Annotations[TokenIDAnnotation], r.now())
	if err != nil {
		return ctrl.Result{}, err
	}
	// A pool whose version changed (an upgrade) gets data for it now:
	// instances made from here on must not join with the old version
	// until the next rotation.
	if left >= r.ttl()/3 && ds.Annotations[VersionAnnotation] == m.Spec.Version {
		if c := findCond(cfg, DataSecretAvailableCondition); c == nil || c.Status != metav1.ConditionTrue {
			setData(cfg, metav1.ConditionTrue, ReasonAvailable, "")
		}
		return ctrl.Result{RequeueAfter: r.ttl() / 6}, nil
	}
	why := "the pool's bootstrap token was rotated before it expired"
	if v := ds.Annotations[VersionAnnotation]; v != m.Spec.Version {
		why = "the pool's version changed from " + orNone(v) + " to " + m.Spec.Version + ": a new bootstrap token was made"
	}
	res, err := r.renderData(ctx, cfg, m, cl, ds)
	if err == nil && ds.Annotations[TokenIDAnnotation] != "" {
		if c := findCond(cfg, ReadyCondition); c != nil && c.Reason == ReasonTokenReplaced {
			setData(cfg, metav1.ConditionTrue, ReasonTokenRotated, why+" and data Secret "+ds.Name+" written again; the old token expires by itself")
		}
		res.RequeueAfter = r.ttl() / 6
	}
	return res, err
}

// tokenLifetimeLeft is how long the bootstrap token id has until it
// expires; 0 when it is gone, has no or a bad expiration, or id is "".
func tokenLifetimeLeft(ctx context.Context, wc corev1client.CoreV1Interface, id string, now time.Time) (time.Duration, error) {
	if id == "" {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, workloadTimeout)
	defer cancel()
	s, err := wc.Secrets(metav1.NamespaceSystem).Get(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	exp, err := time.Parse(time.RFC3339, string(s.Data[bootstrapapi.BootstrapTokenExpirationKey]))
	if err != nil || !exp.After(now) {
		return 0, nil
	}
	return exp.Sub(now), nil
}

// poolToConfig maps a MachinePool to the MachineadmConfig its template's
// bootstrap reference names.
func poolToConfig(_ context.Context, o client.Object) []reconcile.Request {
	p, ok := o.(*clusterv1.MachinePool)
	if !ok {
		return nil
	}
	ref := p.Spec.Template.Spec.Bootstrap.ConfigRef
	if ref.Kind != "MachineadmConfig" || ref.APIGroup != bootstrapv1.GroupVersion.Group || ref.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: p.Namespace, Name: ref.Name}}}
}

// orNone is v, or "none" when it is empty.
func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}
