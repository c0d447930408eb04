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

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
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
		name, err := r.createMachine(ctx, mcp, cl, d.FailureDomain)
		if err != nil {
			return ctrl.Result{}, err
		}
		logger.Info("created control-plane Machine", "machine", name, "why", d.Message)
		return ctrl.Result{RequeueAfter: waitRequeue}, nil
	case actDelete, actRemediate:
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
		return ctrl.Result{RequeueAfter: waitRequeue}, nil
	case actWait:
		if d.Machine != "" {
			// A remediation that waits says why on the Machine too, where
			// the MachineHealthCheck left OwnerRemediated False.
			if err := r.noteRemediationWait(ctx, mcp.Namespace, d); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{RequeueAfter: waitRequeue}, nil
	}
	return ctrl.Result{RequeueAfter: statusRequeue}, nil
}

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
	patch := client.MergeFrom(m.DeepCopy())
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: clusterv1.MachineOwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: d.Reason, Message: d.Message, ObservedGeneration: m.Generation})
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, m, patch))
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
	patch := client.MergeFrom(m.DeepCopy())
	meta.SetStatusCondition(&m.Status.Conditions, want)
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, m, patch))
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
