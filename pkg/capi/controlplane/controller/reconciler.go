// Package controller is machineadm's Cluster API control-plane provider:
// it reconciles MachineadmControlPlanes (control-plane contract v1beta2)
// into control-plane Machines, each bootstrapped by a MachineadmConfig of
// the bootstrap provider. It creates the first Machine (which initialises
// the cluster) and then joins the others one at a time, each once the
// previous one is Ready; it keeps the Cluster's CA Secrets and
// "<cluster>-kubeconfig"; it scales down, rolls out and remediates one
// Machine at a time, never below etcd's quorum, removing a Machine's etcd
// member in Cluster API's pre-terminate hook before its infrastructure
// goes. Its decisions are the pure functions of decide.go.
package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// Finalizer keeps a MachineadmControlPlane until its Machines are gone.
const Finalizer = "controlplane.machineadm.io/cleanup"

// Remediation defaults (spec.remediation).
const (
	DefaultMaxRetry         = 3
	DefaultMinHealthyPeriod = time.Hour
)

// Requeue intervals.
const (
	waitRequeue   = 10 * time.Second
	statusRequeue = 30 * time.Second
)

// Reconciler reconciles MachineadmControlPlanes.
type Reconciler struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// EtcdDialer reaches a Cluster's stacked etcd. Default
	// DirectEtcdDialer.
	EtcdDialer EtcdDialer
	// WorkloadClient reaches a Cluster's workload API server (to keep
	// kubeadm-config's version right during an upgrade, and kube-proxy's
	// after it). Default KubeconfigWorkloadClient.
	WorkloadClient WorkloadClient
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// +kubebuilder:rbac:groups=controlplane.machineadm.io,resources=machineadmcontrolplanes;machineadmcontrolplanes/status;machineadmcontrolplanes/finalizers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=controlplane.machineadm.io,resources=machineadmcontrolplanetemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=bootstrap.machineadm.io,resources=machineadmconfigs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines;machines/status,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=*,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings one MachineadmControlPlane towards its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	mcp := &cpv1.MachineadmControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, mcp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := mcp.DeepCopy()
	defer func() {
		if err := r.patchStatus(ctx, before, mcp); err != nil && retErr == nil {
			retErr = err
		}
	}()
	cl, err := r.ownerCluster(ctx, mcp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cl == nil {
		if !mcp.DeletionTimestamp.IsZero() {
			return ctrl.Result{}, r.removeFinalizerWhenNoMachines(ctx, mcp, nil)
		}
		setCond(mcp, AvailableCondition, metav1.ConditionFalse, ReasonWaitingForCluster, "waiting for a Cluster to own this control plane (spec.controlPlaneRef)")
		return ctrl.Result{}, nil
	}
	if ptrTrue(cl.Spec.Paused) || metav1.HasAnnotation(mcp.ObjectMeta, clusterv1.PausedAnnotation) {
		setCond(mcp, PausedCondition, metav1.ConditionTrue, ReasonPaused, "the Cluster or the control plane is paused")
		return ctrl.Result{}, nil
	}
	setCond(mcp, PausedCondition, metav1.ConditionFalse, ReasonNotPaused, "")

	machines, err := r.machines(ctx, mcp, cl)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.updateCounts(mcp, cl, machines)
	if !mcp.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, mcp, cl, machines)
	}
	setCond(mcp, DeletingCondition, metav1.ConditionFalse, ReasonNotDeleting, "")
	if !controllerutil.ContainsFinalizer(mcp, Finalizer) {
		fin := mcp.DeepCopy()
		controllerutil.AddFinalizer(fin, Finalizer)
		if err := r.Client.Patch(ctx, fin, client.MergeFrom(mcp)); err != nil {
			return ctrl.Result{}, err
		}
		mcp.Finalizers = fin.Finalizers
	}
	if !ptrTrue(cl.Status.Initialization.InfrastructureProvisioned) || cl.Spec.ControlPlaneEndpoint.Host == "" || cl.Spec.ControlPlaneEndpoint.Port == 0 {
		setCond(mcp, AvailableCondition, metav1.ConditionFalse, ReasonWaitingForInfrastructure, "waiting for the Cluster's infrastructure and control-plane endpoint")
		return ctrl.Result{}, nil
	}
	if err := ensureCertificates(ctx, r.Client, mcp, cl); err != nil {
		setCond(mcp, CertificatesAvailableCondition, metav1.ConditionFalse, ReasonCertificatesFailed, err.Error())
		return ctrl.Result{}, err
	}
	if err := ensureKubeconfig(ctx, r.Client, mcp, cl, r.now()); err != nil {
		setCond(mcp, CertificatesAvailableCondition, metav1.ConditionFalse, ReasonCertificatesFailed, err.Error())
		return ctrl.Result{}, err
	}
	setCond(mcp, CertificatesAvailableCondition, metav1.ConditionTrue, ReasonCertificatesAvailable, "")

	for i := range machines {
		if err := r.syncInPlace(ctx, mcp, cl, &machines[i]); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.syncUpToDate(ctx, mcp, &machines[i]); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.reportOutcomes(ctx, mcp, machines); err != nil {
		return ctrl.Result{}, err
	}

	st := r.snapshot(mcp, cl, machines)
	var etcd EtcdClient
	if st.Initialized && !externalEtcd(mcp) {
		etcd, st.Etcd, err = r.etcdView(ctx, cl, machines)
		if err != nil {
			setCond(mcp, EtcdClusterHealthyCondition, metav1.ConditionUnknown, ReasonEtcdUnreachable, err.Error())
			setCond(mcp, AvailableCondition, metav1.ConditionFalse, ReasonEtcdUnreachable, "etcd is unreachable: "+err.Error())
			return ctrl.Result{RequeueAfter: waitRequeue}, nil
		}
		defer etcd.Close()
		r.etcdConditions(mcp, st.Etcd)
	} else if externalEtcd(mcp) {
		setCond(mcp, EtcdClusterHealthyCondition, metav1.ConditionTrue, ReasonExternalEtcd, "etcd is external: not managed")
	}
	r.availability(mcp, st)

	if res, done, err := r.reconcilePreTerminate(ctx, mcp, machines, etcd, st.Etcd); done || err != nil {
		return res, err
	}
	d := decide(st)
	return r.apply(ctx, mcp, cl, st, d)
}

// apply carries out one decision and records it in the conditions.
func (r *Reconciler) apply(ctx context.Context, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster, st state, d decision) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	logger.V(1).Info("decision", "kind", d.Kind, "machine", d.Machine, "reason", d.Reason, "message", d.Message)
	desired := st.Desired
	n := len(st.Machines)
	setCond(mcp, ScalingUpCondition, boolStatus(n < desired), scalingReason(n < desired, d), scalingMessage(n < desired, d))
	setCond(mcp, ScalingDownCondition, boolStatus(n > desired), scalingReason(n > desired, d), scalingMessage(n > desired, d))
	outdated := 0
	for _, m := range st.Machines {
		if !m.UpToDate {
			outdated++
		}
	}
	setCond(mcp, RollingOutCondition, boolStatus(outdated > 0), rollingReason(outdated > 0, d), scalingMessage(outdated > 0, d))
	r.remediationCondition(mcp, st, d)

	switch d.Kind {
	case actCreate:
		kubeProxyWaits(mcp, st, d)
		if st.Initialized && n > 0 {
			// A joining control plane runs the version kubeadm-config
			// names: during an upgrade it must name the new one first.
			if err := r.syncWorkloadVersion(ctx, mcp, cl); err != nil {
				setCond(mcp, ScalingUpCondition, metav1.ConditionTrue, ReasonKubeadmConfigNotUpdated, err.Error())
				return ctrl.Result{}, err
			}
		}
		name, err := r.createMachine(ctx, mcp, cl, d.FailureDomain)
		if err != nil {
			return ctrl.Result{}, err
		}
		logger.Info("created control-plane Machine", "machine", name, "why", d.Message)
		// The next pass must see it, or it would create another.
		return ctrl.Result{RequeueAfter: waitRequeue}, r.waitForCache(ctx, client.ObjectKey{Namespace: mcp.Namespace, Name: name}, func(m *clusterv1.Machine) bool { return m != nil })
	case actDelete, actRemediate:
		kubeProxyWaits(mcp, st, d)
		m := &clusterv1.Machine{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: mcp.Namespace, Name: d.Machine}, m); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if d.Kind == actRemediate {
			mcp.Status.LastRemediation = &cpv1.LastRemediation{Machine: d.Machine, Time: metav1.NewTime(r.now()), RetryCount: d.Retry}
		}
		if err := r.Client.Delete(ctx, m); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		logger.Info("deleting control-plane Machine", "machine", d.Machine, "why", d.Message)
		// The next pass must see the deletion, or it would delete another.
		return ctrl.Result{RequeueAfter: waitRequeue}, r.waitForCache(ctx, client.ObjectKeyFromObject(m), func(m *clusterv1.Machine) bool { return m == nil || !m.DeletionTimestamp.IsZero() })
	case actWait:
		kubeProxyWaits(mcp, st, d)
		if d.Machine != "" {
			// A remediation that waits says why on the Machine too, where
			// the MachineHealthCheck left OwnerRemediated False.
			if err := r.noteRemediationWait(ctx, mcp.Namespace, d); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{RequeueAfter: waitRequeue}, nil
	}
	// Every Machine is up to date (so at spec.version) and Ready: every
	// API server runs spec.version, and kube-proxy may follow.
	if err := r.syncKubeProxy(ctx, mcp, cl); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: statusRequeue}, nil
}

// syncWorkloadVersion brings kubeadm-config in the workload cluster to
// spec.version (syncKubeadmVersion) before a Machine of that version joins.
func (r *Reconciler) syncWorkloadVersion(ctx context.Context, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster) error {
	wc, err := r.workload(ctx, cl)
	if err != nil {
		return fmt.Errorf("reaching the workload cluster to set kubeadm-config's version %s: %w", mcp.Spec.Version, err)
	}
	changed, err := syncKubeadmVersion(ctx, wc, mcp.Spec.Version)
	if err != nil {
		return fmt.Errorf("setting kubeadm-config's version %s for the next control-plane Machine: %w", mcp.Spec.Version, err)
	}
	if changed {
		log.FromContext(ctx).Info("kubeadm-config now names the control plane's version, for the Machines that join next", "version", mcp.Spec.Version)
	}
	return nil
}

// workload opens a client to cl's workload API server (WorkloadClient).
func (r *Reconciler) workload(ctx context.Context, cl *clusterv1.Cluster) (client.Client, error) {
	open := r.WorkloadClient
	if open == nil {
		open = KubeconfigWorkloadClient
	}
	return open(ctx, r.Client, cl)
}

// snapshot builds the decisions' input.
func (r *Reconciler) snapshot(mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster, machines []clusterv1.Machine) state {
	now := r.now()
	st := state{
		Desired:     int(ptrInt(mcp.Spec.Replicas, 1)),
		MaxSurge:    int(ptrInt(mcp.Spec.Rollout.Strategy.RollingUpdate.MaxSurge, 1)),
		Initialized: ptrTrue(mcp.Status.Initialization.ControlPlaneInitialized),
		Now:         now,
		Remediation: remediationPolicy{
			MaxRetry:         ptrInt(mcp.Spec.Remediation.MaxRetry, DefaultMaxRetry),
			RetryPeriod:      time.Duration(ptrInt(mcp.Spec.Remediation.RetryPeriodSeconds, 0)) * time.Second,
			MinHealthyPeriod: time.Duration(ptrInt(mcp.Spec.Remediation.MinHealthyPeriodSeconds, int32(DefaultMinHealthyPeriod/time.Second))) * time.Second,
		},
	}
	for _, fd := range cl.Status.FailureDomains {
		if ptrTrue(fd.ControlPlane) {
			st.FailureDomains = append(st.FailureDomains, fd.Name)
		}
	}
	sort.Strings(st.FailureDomains)
	var versions []string
	for i := range machines {
		st.Machines = append(st.Machines, info(mcp, &machines[i], now))
		versions = append(versions, machines[i].Spec.Version)
	}
	st.VersionProblem = versionSkew(mcp.Spec.Version, versions)
	if l := mcp.Status.LastRemediation; l != nil {
		st.Last = &lastRemediation{Machine: l.Machine, Time: l.Time.Time, Retry: l.RetryCount}
	}
	return st
}

// machines lists the control plane's Machines: matching its selector and
// controlled by it.
func (r *Reconciler) machines(ctx context.Context, mcp *cpv1.MachineadmControlPlane, cl *clusterv1.Cluster) ([]clusterv1.Machine, error) {
	list := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(mcp.Namespace), client.MatchingLabels(selectorFor(mcp, cl.Name))); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, m := range list.Items {
		if c := metav1.GetControllerOf(&m); c != nil && c.UID == mcp.UID {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ownerCluster is the Cluster named by the control plane's owner
// reference (set by Cluster API's Cluster controller from
// spec.controlPlaneRef); nil when there is none yet.
func (r *Reconciler) ownerCluster(ctx context.Context, mcp *cpv1.MachineadmControlPlane) (*clusterv1.Cluster, error) {
	for _, o := range mcp.OwnerReferences {
		if o.Kind != "Cluster" || !strings.HasPrefix(o.APIVersion, clusterv1.GroupVersion.Group+"/") {
			continue
		}
		cl := &clusterv1.Cluster{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: mcp.Namespace, Name: o.Name}, cl)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return cl, err
	}
	return nil, nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func ptr[T any](v T) *T { return &v }

func ptrTrue(b *bool) bool { return b != nil && *b }

func ptrInt(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// cacheWait bounds waitForCache.
const cacheWait = 30 * time.Second

// waitForCache waits until the client (a manager's cached client) shows
// the Machine as ok says (nil: not found), as Cluster API's MachineSet
// controller does after it creates Machines: the next pass decides from
// the cache, and a cache that lags one create or delete would make it do
// the same again.
func (r *Reconciler) waitForCache(ctx context.Context, key client.ObjectKey, ok func(*clusterv1.Machine) bool) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, cacheWait, true, func(ctx context.Context) (bool, error) {
		m := &clusterv1.Machine{}
		err := r.Client.Get(ctx, key, m)
		if apierrors.IsNotFound(err) {
			return ok(nil), nil
		}
		if err != nil {
			return false, err
		}
		return ok(m), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the cache to show Machine %s: %w", key.Name, err)
	}
	return nil
}
