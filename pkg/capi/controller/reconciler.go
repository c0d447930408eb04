// Package controller is machineadm's Cluster API bootstrap provider: it
// turns each MachineadmConfig into a data Secret (bootstrap contract
// v1beta2) holding a small rendered stub and the sealed machine spec, and
// mirrors the node's bootstrap outcome back into the config's conditions.
package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// Finalizer lets the controller delete a Machine's bootstrap token and
// release the init lock when its config goes away.
const Finalizer = "bootstrap.machineadm.io/cleanup"

// Annotations on the data Secret. They travel with it through
// `clusterctl move`, which drops status.
const (
	// TokenIDAnnotation is the ID (the public half) of the Machine's
	// bootstrap token, while it exists.
	TokenIDAnnotation = "bootstrap.machineadm.io/token-id"
	// ActionAnnotation records the rendered action: "init",
	// "control-plane-join" or "join".
	ActionAnnotation = "bootstrap.machineadm.io/action"
)

// Defaults.
const (
	// DefaultTokenTTL is how long a join token lives between refreshes.
	DefaultTokenTTL = 15 * time.Minute
	// cleanupTimeout bounds how long deletion keeps retrying to reach the
	// workload cluster before it lets the config go.
	cleanupTimeout = 5 * time.Minute
	lockRetry      = 10 * time.Second
	// secretRetry is how often a config waiting for a Secret it refers
	// to looks again (Secrets are read live, not watched).
	secretRetry = 30 * time.Second
	outcomePoll = 20 * time.Second
	// outcomeRecheck is how often a failed outcome is read again, so that
	// a rerun's success on the machine replaces it.
	outcomeRecheck = time.Minute
)

// Reconciler reconciles MachineadmConfigs.
type Reconciler struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// Sealer seals every secret before it enters a data Secret. Without
	// one no data Secret is made (condition SealerUnavailable).
	Sealer Sealer
	// WorkloadClient reaches a workload cluster. Default
	// KubeconfigSecretClient.
	WorkloadClient WorkloadClientFunc
	// TokenTTL is the join tokens' lifetime. Default DefaultTokenTTL.
	TokenTTL time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// ReportURL is the base URL (http or https, no trailing path) at which
	// machines reach the report receiver (ReportServer); when set, every
	// new data Secret's spec posts its report there (spec.report.url,
	// unless the config sets one). Default "": no receiver, outcomes come
	// from the Node annotation only.
	ReportURL string
	// PayloadURL is the base URL (http or https) at which machines reach
	// the payload endpoint (PayloadServer); with it, data over a config's
	// spec.userDataLimit is a stub that fetches the sealed spec from
	// there. Default "": such data is DataTooLarge. machineadm-controller
	// sets it to ReportURL: one listener serves both.
	PayloadURL string
	// Agents serves the agent builds from the management cluster; a
	// config without spec.agent.url downloads its build from there.
	// Default nil: such a config is InvalidConfig.
	Agents *AgentStore
	// SecretMeta reads the metadata (metav1.PartialObjectMetadata) of
	// Secrets of type cluster.x-k8s.io/secret from a cache: the manager's,
	// restricted by SecretCacheOptions. Default nil: every Secret is read
	// live (see secretcache.go for what the cache is used for).
	SecretMeta client.Reader

	caHashes  secretMemo[string]
	workloads secretMemo[corev1client.CoreV1Interface]
	status    statusMemo
	initLock  lockMemo
}

// +kubebuilder:rbac:groups=bootstrap.machineadm.io,resources=machineadmconfigs;machineadmconfigs/status;machineadmconfigs/finalizers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=bootstrap.machineadm.io,resources=machineadmconfigtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status;machines;machines/status;machinesets;machinedeployments;machinepools,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings one MachineadmConfig towards its data Secret and
// outcome.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	cfg := &bootstrapv1.MachineadmConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.status.stale(cfg.UID, cfg.ResourceVersion, ptrTrue(cfg.Status.Initialization.DataSecretCreated), r.now()) {
		// Read from a cache that has not seen this process's last status
		// patch yet: that patch's own event brings the config back.
		return ctrl.Result{}, nil
	}
	before := cfg.DeepCopy()
	ctx = context.WithValue(ctx, finalizersKey{}, &finalizersWritten{})
	defer func() {
		if err := r.patch(ctx, before, cfg); err != nil && retErr == nil {
			retErr = err
		}
	}()

	m, err := r.ownerMachine(ctx, cfg)
	// A config owned by a MachinePool is the data of all its instances
	// (machinepool.go).
	var pool *clusterv1.MachinePool
	if err == nil && m == nil {
		if pool, err = r.ownerPool(ctx, cfg); pool != nil {
			m = poolMachine(pool)
		}
	}
	if err != nil || m == nil {
		if err == nil && cfg.DeletionTimestamp.IsZero() {
			setData(cfg, metav1.ConditionFalse, ReasonWaitingForMachine, "waiting for a Machine or MachinePool to own this config")
		}
		if m == nil && !cfg.DeletionTimestamp.IsZero() {
			controllerutil.RemoveFinalizer(cfg, Finalizer)
		}
		return ctrl.Result{}, err
	}
	cl := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}, cl); err != nil {
		if apierrors.IsNotFound(err) && !cfg.DeletionTimestamp.IsZero() {
			controllerutil.RemoveFinalizer(cfg, Finalizer)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ptrTrue(cl.Spec.Paused) || hasAnnotation(cfg, clusterv1.PausedAnnotation) {
		setCond(cfg, PausedCondition, metav1.ConditionTrue, ReasonPaused, "the Cluster or the config is paused")
		return ctrl.Result{}, nil
	}
	setCond(cfg, PausedCondition, metav1.ConditionFalse, ReasonNotPaused, "")
	if !cfg.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, cfg, m, cl)
	}
	if controlPlaneInitialized(cl) && !r.initLock.released(cl.UID) {
		if err := releaseInitLock(ctx, r.Client, cl, ""); err != nil {
			return ctrl.Result{}, err
		}
		r.initLock.set(cl.UID, true)
	}
	after := r.reconcileAfterData
	if pool != nil {
		after = r.reconcilePoolAfterData
	}
	if ptrTrue(cfg.Status.Initialization.DataSecretCreated) {
		return after(ctx, cfg, m, cl)
	}
	// clusterctl move copies objects without status: a data Secret that
	// exists is adopted as it is.
	ds, err := r.existingData(ctx, cfg)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ds != nil {
		return r.takeExisting(ctx, cfg, m, pool, cl, ds, after)
	}
	return r.reconcileData(ctx, cfg, m, cl)
}

// existingData returns the Secret of the config's name, nil when there is
// none. With a metadata cache (SecretMeta) a Secret it does not see counts
// as none, unless the config already found its name taken: a Secret of
// another type is not in the cache, and writing the data then fails with
// AlreadyExists (renderData reads it live then).
func (r *Reconciler) existingData(ctx context.Context, cfg *bootstrapv1.MachineadmConfig) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: cfg.Namespace, Name: cfg.Name}
	var ds *corev1.Secret
	var err error
	if c := findCond(cfg, DataSecretAvailableCondition); r.SecretMeta == nil || (c != nil && c.Reason == ReasonDataSecretNameTaken) {
		ds = &corev1.Secret{}
		err = r.Client.Get(ctx, key, ds)
	} else if m, merr := r.secretMeta(ctx, key); merr != nil || m == nil {
		return nil, merr
	} else {
		// The cache holds only Secrets of Cluster API's type.
		ds = &corev1.Secret{ObjectMeta: *m.ObjectMeta.DeepCopy(), Type: ClusterSecretType}
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return ds, err
}

// takeExisting adopts ds, a Secret of the config's name that exists
// without the config's status naming it, when it is a data Secret of this
// config's that its Machine (or pool, when not nil) already names; it
// renders the data again into a data Secret the Machine does not name
// (rewriteData), and refuses any other Secret.
func (r *Reconciler) takeExisting(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, pool *clusterv1.MachinePool, cl *clusterv1.Cluster, ds *corev1.Secret, after func(context.Context, *bootstrapv1.MachineadmConfig, *clusterv1.Machine, *clusterv1.Cluster) (ctrl.Result, error)) (ctrl.Result, error) {
	if !isDataSecretOf(ds, cfg) {
		// Someone else's Secret of the same name (an application's, one
		// the config refers to): never handed to the Machine as its
		// bootstrap data, never overwritten.
		setData(cfg, metav1.ConditionFalse, ReasonDataSecretNameTaken, "Secret "+cfg.Namespace+"/"+cfg.Name+" exists and is not this config's data Secret (it is not of type "+string(ClusterSecretType)+" controlled by MachineadmConfig "+cfg.Name+"); rename or delete it, or give the config another name")
		return ctrl.Result{RequeueAfter: secretRetry}, nil
	}
	if !namesDataSecret(m, pool, ds.Name) {
		// Not a moved Secret: its Machine never took it as its data.
		// Whoever can create Secrets here could have written it, so its
		// content is not trusted: the data is rendered again over it. Read
		// live: the metadata cache has neither its data nor immutable.
		live := &corev1.Secret{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(ds), live); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if !isDataSecretOf(live, cfg) {
			return r.takeExisting(ctx, cfg, m, pool, cl, live, after)
		}
		return r.rewriteData(ctx, cfg, m, cl, live)
	}
	if err := r.adopt(ctx, cfg, ds); err != nil {
		return ctrl.Result{}, err
	}
	return after(ctx, cfg, m, cl)
}

// isDataSecretOf reports whether ds is a data Secret written for cfg: of
// Cluster API's Secret type, with a controller reference to a
// MachineadmConfig of cfg's name. The UID is not compared: clusterctl
// move gives the moved config a new one (and rewrites the reference).
func isDataSecretOf(ds *corev1.Secret, cfg *bootstrapv1.MachineadmConfig) bool {
	o := metav1.GetControllerOf(ds)
	if ds.Type != ClusterSecretType || o == nil || o.Kind != "MachineadmConfig" || o.Name != cfg.Name {
		return false
	}
	g, err := schemaGroup(o.APIVersion)
	return err == nil && g == bootstrapv1.GroupVersion.Group
}

// namesDataSecret reports whether the Machine m (or, for a pool's config,
// the MachinePool pool) already names the Secret name as its bootstrap
// data (spec.bootstrap.dataSecretName, which Cluster API copies from the
// config's status and clusterctl move carries over with the spec).
func namesDataSecret(m *clusterv1.Machine, pool *clusterv1.MachinePool, name string) bool {
	ref := m.Spec.Bootstrap.DataSecretName
	if pool != nil {
		ref = pool.Spec.Template.Spec.Bootstrap.DataSecretName
	}
	return ref != nil && *ref == name
}

// rewriteData renders cfg's data again into ds, a Secret of the data
// Secret's name, type and controller that the config's Machine does not
// name (written by someone else, or by a reconcile whose status update
// was lost): its labels, annotations, owners and data are replaced, so
// nothing of what it held reaches a machine. The condition says
// DataRewritten.
//
// A Secret no update can make right is deleted instead, and the data
// written anew by the next reconcile: one that is immutable (its data
// cannot change), and init data (which has no token to replace, so
// renderData writes nothing over it: a config whose status update was
// lost after its own init render waited forever). Its finalizers are
// removed first, so that the name is free again.
func (r *Reconciler) rewriteData(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, cl *clusterv1.Cluster, ds *corev1.Secret) (ctrl.Result, error) {
	if _, isCP := m.Labels[clusterv1.MachineControlPlaneLabel]; ptrTrue(ds.Immutable) || (isCP && !controlPlaneInitialized(cl)) {
		return r.dropUntrustedData(ctx, cfg, ds)
	}
	// Every owner reference goes too: the writer chose them (one that
	// blocks its owner's deletion, one whose owner's deletion takes the
	// data along).
	ds.Labels, ds.Annotations, ds.Data, ds.Finalizers, ds.OwnerReferences = nil, nil, nil, nil, nil
	if err := controllerutil.SetControllerReference(cfg, ds, r.Client.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.renderData(ctx, cfg, m, cl, ds)
	if c := findCond(cfg, ReadyCondition); err == nil && c != nil && c.Reason == ReasonTokenReplaced {
		cfg.Status.DataSecretName = ds.Name
		cfg.Status.Initialization.DataSecretCreated = ptr(true)
		setData(cfg, metav1.ConditionTrue, ReasonDataRewritten, "Secret "+ds.Name+" existed without this config's status and its Machine did not name it: its content was not trusted, and the data was rendered again into it")
		setCond(cfg, BootstrapSucceededCondition, metav1.ConditionUnknown, ReasonWaitingForNode, "waiting for the Machine's Node")
	}
	return res, err
}

// dropUntrustedData deletes ds, a data Secret rewriteData does not trust
// and cannot rewrite (its finalizers removed first; only this UID), and
// asks for a reconcile that writes the data anew.
func (r *Reconciler) dropUntrustedData(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, ds *corev1.Secret) (ctrl.Result, error) {
	if len(ds.Finalizers) > 0 {
		ds.Finalizers = nil
		if err := r.Client.Update(ctx, ds); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if err := r.Client.Delete(ctx, ds, client.Preconditions{UID: &ds.UID}); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("deleted a data Secret its Machine did not name; the data is written anew", "secret", ds.Name)
	setData(cfg, metav1.ConditionFalse, ReasonDataRewritten, "Secret "+ds.Name+" existed without this config's status and its Machine did not name it: its content was not trusted; it was deleted and the data is written anew")
	return ctrl.Result{Requeue: true}, nil
}

// adopt takes over ds, a data Secret of cfg's that exists without the
// config's status saying so (clusterctl move copies objects without
// status): the status points at it, the config gets its finalizer (the
// token and the init lock are cleaned up when it goes), and the Secret's
// controller reference names this config's UID (the moved config has a
// new one).
func (r *Reconciler) adopt(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, ds *corev1.Secret) error {
	if o := metav1.GetControllerOf(ds); o == nil || o.UID != cfg.UID {
		patch := client.MergeFrom(ds.DeepCopy())
		refs := ds.OwnerReferences[:0:0]
		for _, ref := range ds.OwnerReferences {
			if ref.Controller == nil || !*ref.Controller {
				refs = append(refs, ref)
			}
		}
		ds.OwnerReferences = refs
		if err := controllerutil.SetControllerReference(cfg, ds, r.Client.Scheme()); err != nil {
			return err
		}
		if err := r.Client.Patch(ctx, ds, patch); err != nil {
			return err
		}
	}
	controllerutil.AddFinalizer(cfg, Finalizer)
	cfg.Status.DataSecretName = ds.Name
	cfg.Status.Initialization.DataSecretCreated = ptr(true)
	setData(cfg, metav1.ConditionTrue, ReasonAdopted, "adopted the existing data Secret "+ds.Name)
	return nil
}

// reconcileAfterData keeps the token alive until the Machine has a Node
// (making a new one, and rendering the data again, when it was deleted
// before), then deletes it and mirrors the Node's outcome. A failed
// outcome is looked at again every outcomeRecheck, so that a rerun's
// success on the machine replaces it.
func (r *Reconciler) reconcileAfterData(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, cl *clusterv1.Cluster) (ctrl.Result, error) {
	ds, err := r.dataSecretMeta(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: cfg.Status.DataSecretName})
	if err != nil {
		if apierrors.IsNotFound(err) {
			setData(cfg, metav1.ConditionFalse, ReasonDataSecretMissing, "data Secret "+cfg.Status.DataSecretName+" was deleted; it is not made again (delete the Machine to replace it)")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if c := findCond(cfg, DataSecretAvailableCondition); c == nil || c.Status != metav1.ConditionTrue {
		setData(cfg, metav1.ConditionTrue, ReasonAvailable, "")
	}
	tokenID := ds.Annotations[TokenIDAnnotation]
	node := m.Status.NodeRef.Name
	if o := reportedOutcome(cfg); o != nil && node == "" {
		// The machine posted its report before it had a Node
		// (ReportServer). After a failure its token is no longer needed:
		// deleted now when the workload cluster answers, else it expires.
		applyOutcome(cfg, o)
		if o.Result == "Succeeded" {
			return ctrl.Result{RequeueAfter: outcomePoll}, nil
		}
		if tokenID != "" {
			if wc, err := r.workloadClient(ctx, cl); err == nil && deleteToken(ctx, wc, tokenID) == nil {
				patch := client.MergeFrom(ds.DeepCopy())
				delete(ds.Annotations, TokenIDAnnotation)
				if err := r.Client.Patch(ctx, ds, patch); err != nil {
					return ctrl.Result{}, err
				}
			}
		}
		return ctrl.Result{RequeueAfter: outcomeRecheck}, nil
	}
	if tokenID == "" && node == "" {
		setCond(cfg, BootstrapSucceededCondition, metav1.ConditionUnknown, ReasonWaitingForNode, "waiting for the Machine's Node")
		return ctrl.Result{}, nil
	}
	if outcomeSucceeded(cfg) && tokenID == "" {
		return ctrl.Result{}, nil
	}
	wc, err := r.workloadClient(ctx, cl)
	if err != nil {
		setCond(cfg, BootstrapSucceededCondition, metav1.ConditionUnknown, ReasonWorkloadUnreachable, err.Error())
		return ctrl.Result{RequeueAfter: outcomePoll}, nil
	}
	if node == "" {
		setCond(cfg, BootstrapSucceededCondition, metav1.ConditionUnknown, ReasonWaitingForNode, "waiting for the Machine's Node")
		ok, err := refreshToken(ctx, wc, tokenID, r.ttl(), r.now())
		if err != nil {
			return ctrl.Result{}, err
		}
		if !ok {
			// Deleted before the Machine joined (by hand, or expired while
			// the controller was down): a new token, and the data again
			// (into the Secret read live: ds may be its metadata alone).
			full := &corev1.Secret{}
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(ds), full); err != nil {
				return ctrl.Result{}, err
			}
			return r.renderData(ctx, cfg, m, cl, full)
		}
		return ctrl.Result{RequeueAfter: r.ttl() / 4}, nil
	}
	if tokenID != "" {
		if err := deleteToken(ctx, wc, tokenID); err != nil {
			return ctrl.Result{}, err
		}
		patch := client.MergeFrom(ds.DeepCopy())
		delete(ds.Annotations, TokenIDAnnotation)
		if err := r.Client.Patch(ctx, ds, patch); err != nil {
			return ctrl.Result{}, err
		}
	}
	o, err := readOutcome(ctx, wc, node)
	if err != nil {
		setCond(cfg, BootstrapSucceededCondition, metav1.ConditionUnknown, ReasonWorkloadUnreachable, err.Error())
		return ctrl.Result{RequeueAfter: outcomePoll}, nil
	}
	if o == nil {
		setCond(cfg, BootstrapSucceededCondition, metav1.ConditionUnknown, ReasonWaitingForReport, "Node "+node+" has no machineadm.io/bootstrap-report annotation yet")
		return ctrl.Result{RequeueAfter: outcomePoll}, nil
	}
	applyOutcome(cfg, o)
	if o.Result != "Succeeded" {
		return ctrl.Result{RequeueAfter: outcomeRecheck}, nil
	}
	return ctrl.Result{}, nil
}

// reconcileDelete deletes the Machine's token and releases the init lock,
// retrying at most cleanupTimeout; the data Secret goes with the config
// (it is owned by it).
func (r *Reconciler) reconcileDelete(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, cl *clusterv1.Cluster) (ctrl.Result, error) {
	setData(cfg, metav1.ConditionFalse, ReasonDeleting, "the config is being deleted")
	if !controllerutil.ContainsFinalizer(cfg, Finalizer) {
		return ctrl.Result{}, nil
	}
	err := r.cleanup(ctx, cfg, m, cl)
	if err != nil && r.now().Sub(cfg.DeletionTimestamp.Time) < cleanupTimeout {
		return ctrl.Result{}, err
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "giving up cleaning up after the deleted config")
	}
	controllerutil.RemoveFinalizer(cfg, Finalizer)
	return ctrl.Result{}, nil
}

func (r *Reconciler) cleanup(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, cl *clusterv1.Cluster) error {
	if err := releaseInitLock(ctx, r.Client, cl, m.Name); err != nil {
		return err
	}
	ds, err := r.dataSecretMeta(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: cfg.Name})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	id := ds.Annotations[TokenIDAnnotation]
	if id == "" || !cl.DeletionTimestamp.IsZero() {
		return nil
	}
	wc, err := r.workloadClient(ctx, cl)
	if errors.Is(err, errNoKubeconfig) {
		return nil
	}
	if err != nil {
		return err
	}
	return deleteToken(ctx, wc, id)
}

func (r *Reconciler) ownerMachine(ctx context.Context, cfg *bootstrapv1.MachineadmConfig) (*clusterv1.Machine, error) {
	for _, o := range cfg.OwnerReferences {
		if o.Kind != "Machine" {
			continue
		}
		if gv, err := schemaGroup(o.APIVersion); err != nil || gv != clusterv1.GroupVersion.Group {
			continue
		}
		m := &clusterv1.Machine{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: o.Name}, m)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return m, err
	}
	return nil, nil
}

// finalizersWritten, in a reconcile's context, holds the finalizers the
// reconcile already wrote to the server (renderData adds its finalizer
// before it makes a token), so that patch does not write them again.
type finalizersWritten struct{ list []string }

type finalizersKey struct{}

// patch writes metadata and status changes.
func (r *Reconciler) patch(ctx context.Context, before, after *bootstrapv1.MachineadmConfig) error {
	after.Status.ObservedGeneration = after.Generation
	// Every condition was looked at in this reconcile: each says which
	// generation it describes.
	for i := range after.Status.Conditions {
		after.Status.Conditions[i].ObservedGeneration = after.Generation
	}
	// Merge patches without a resourceVersion: status and finalizers are
	// this controller's alone.
	base := before.DeepCopy()
	base.ResourceVersion = after.ResourceVersion
	if !equality.Semantic.DeepEqual(before.Status, after.Status) {
		st := after.DeepCopy()
		err := r.Client.Status().Patch(ctx, st, client.MergeFrom(base))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("patching status: %w", err)
		}
		if err == nil && ptrTrue(after.Status.Initialization.DataSecretCreated) && !ptrTrue(before.Status.Initialization.DataSecretCreated) {
			r.status.wrote(after.UID, r.now(), before.ResourceVersion, base.ResourceVersion)
		}
	}
	written, _ := ctx.Value(finalizersKey{}).(*finalizersWritten)
	if !equality.Semantic.DeepEqual(before.Finalizers, after.Finalizers) && (written == nil || written.list == nil || !slices.Equal(written.list, after.Finalizers)) {
		meta := after.DeepCopy()
		if err := r.Client.Patch(ctx, meta, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("patching finalizers: %w", err)
		}
	}
	return nil
}

// controlPlaneInitialized reports whether the Cluster's control plane is
// initialised: status.initialization.controlPlaneInitialized (set from a
// control-plane provider) or the ControlPlaneInitialized condition, which
// Cluster API's core also sets for Clusters without a control-plane
// provider once a control-plane Machine has a Node.
func controlPlaneInitialized(cl *clusterv1.Cluster) bool {
	return ptrTrue(cl.Status.Initialization.ControlPlaneInitialized) ||
		meta.IsStatusConditionTrue(cl.Status.Conditions, clusterv1.ClusterControlPlaneInitializedCondition)
}

func (r *Reconciler) workload() WorkloadClientFunc {
	if r.WorkloadClient != nil {
		return r.WorkloadClient
	}
	return KubeconfigSecretClient
}

func (r *Reconciler) ttl() time.Duration {
	if r.TokenTTL > 0 {
		return r.TokenTTL
	}
	return DefaultTokenTTL
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
