package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	mspec "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/capi/leakcheck"
	"github.com/machineadm/machineadm/pkg/render"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/spec"
)

// replaceData writes the data and annotations of ds, rendered again with
// the new token tokenID, into old, the config's data Secret, and records
// the replacement in the Ready and DataSecretAvailable conditions
// (reason TokenReplaced). The new token is deleted when the write fails.
//
// The payload the old data's stub fetches is kept beside the new one
// (previousPayloadKey): a pool's instance that booted from the old data a
// moment before fetches it, and its token is still valid.
func (r *Reconciler) replaceData(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, old, ds *corev1.Secret, wc corev1client.CoreV1Interface, tokenID string) (ctrl.Result, error) {
	prev, prevDigest := old.Data[payloadKey], old.Annotations[PayloadDigestAnnotation]
	old.Data = ds.Data
	if old.Annotations == nil {
		old.Annotations = map[string]string{}
	}
	delete(old.Annotations, PayloadDigestAnnotation)
	delete(old.Annotations, PreviousPayloadDigestAnnotation)
	maps.Copy(old.Annotations, ds.Annotations)
	if old.Labels == nil {
		old.Labels = map[string]string{}
	}
	maps.Copy(old.Labels, ds.Labels)
	size := 0
	for _, v := range old.Data {
		size += len(v)
	}
	if len(prev) > 0 && prevDigest != "" && prevDigest != ds.Annotations[PayloadDigestAnnotation] && size+len(prev) <= maxDataBytes {
		old.Data[previousPayloadKey] = prev
		old.Annotations[PreviousPayloadDigestAnnotation] = prevDigest
	}
	if err := r.Client.Update(ctx, old); err != nil {
		r.dropToken(ctx, wc, tokenID)
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("bootstrap token was deleted before the Machine joined: made a new one and wrote the data again", "secret", old.Name)
	setData(cfg, metav1.ConditionTrue, ReasonTokenReplaced, "the bootstrap token was deleted before the Machine joined; a new token was made and data Secret "+old.Name+" written again")
	return ctrl.Result{RequeueAfter: r.ttl() / 4}, nil
}

// minKnownLen is the shortest secret value the leak check searches for.
const minKnownLen = 8

// maxDataBytes bounds the rendered bootstrap data: a Secret holds at most
// 1 MiB (corev1.MaxSecretSize), less the format key and some room.
const maxDataBytes = corev1.MaxSecretSize - 1024

// Data Secret keys (bootstrap contract).
const (
	dataKey   = "value"
	formatKey = "format"
)

// reconcileData decides the Machine's action, gathers and seals its
// secrets, renders the bootstrap data and writes the data Secret.
func (r *Reconciler) reconcileData(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, cl *clusterv1.Cluster) (ctrl.Result, error) {
	return r.renderData(ctx, cfg, m, cl, nil)
}

// renderData is reconcileData; with replace (the config's data Secret,
// whose join token was deleted before the Machine joined) it makes a new
// token and writes the data again into the same Secret, under the
// condition reason TokenReplaced. An init Machine that took the init lock
// and fails before its data Secret exists gives the lock back.
func (r *Reconciler) renderData(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, cl *clusterv1.Cluster, replace *corev1.Secret) (ctrl.Result, error) {
	if !ptrTrue(cl.Status.Initialization.InfrastructureProvisioned) || cl.Spec.ControlPlaneEndpoint.Host == "" || cl.Spec.ControlPlaneEndpoint.Port == 0 {
		setData(cfg, metav1.ConditionFalse, ReasonWaitingForInfrastructure, "waiting for the Cluster's infrastructure and control-plane endpoint")
		return ctrl.Result{}, nil
	}
	if m.Spec.Version == "" {
		msg := "Machine " + m.Name + ": spec.version is required"
		if isPoolMachine(m) {
			msg = "MachinePool " + m.Name + ": spec.template.spec.version is required"
		}
		setData(cfg, metav1.ConditionFalse, ReasonInvalidConfig, msg)
		return ctrl.Result{}, nil
	}
	if r.Sealer == nil {
		setData(cfg, metav1.ConditionFalse, ReasonSealerUnavailable, "no sealer is configured: bootstrap data is never written with secrets in the clear")
		return ctrl.Result{}, nil
	}
	_, isCP := m.Labels[clusterv1.MachineControlPlaneLabel]
	initialized := controlPlaneInitialized(cl)
	p := plan{controlPlane: isCP, action: mspec.ActionJoin, pool: isPoolMachine(m)}
	if !initialized && !isCP {
		setData(cfg, metav1.ConditionFalse, ReasonWaitingForInit, "workers join once the control plane is initialised")
		return ctrl.Result{}, nil
	}
	// The Secrets the config refers to, before the init lock: a config
	// waiting for one is not given the lock.
	refs, err := readSecretRefs(ctx, r.Client, cfg, cl, isCP)
	if err != nil {
		var missing *MissingSecretError
		if errors.As(err, &missing) {
			setData(cfg, metav1.ConditionFalse, ReasonMissingSecret, err.Error())
			return ctrl.Result{RequeueAfter: secretRetry}, nil
		}
		return ctrl.Result{}, err
	}
	if !initialized {
		// Init data, if this Machine gets the init lock; the lock is taken
		// only once the spec is valid, so that a config in error never
		// holds it.
		p.action = mspec.ActionInit
	}

	// Build and validate the spec before anything is created.
	var j joinInfo
	if p.action == mspec.ActionJoin {
		hash, err := r.caCertHashOf(ctx, cl)
		if err != nil {
			return r.secretErr(cfg, err)
		}
		j = joinInfo{endpoint: net.JoinHostPort(cl.Spec.ControlPlaneEndpoint.Host, strconv.Itoa(int(cl.Spec.ControlPlaneEndpoint.Port))), caCertHash: hash}
	}
	s, err := buildSpec(cfg, m, cl, p, j, refs)
	if err != nil {
		return r.configErr(cfg, err)
	}
	if s.Spec.OS == mspec.OSWindows && s.Spec.Node.Name != "" {
		who, err := windowsNameTaken(ctx, r.Client, cfg, m, cl, s.Spec.Node.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if who != "" {
			setData(cfg, metav1.ConditionFalse, ReasonNodeNameTaken, "Machine "+m.Name+" would be Node "+s.Spec.Node.Name+" (its name within Windows' 15 characters), and "+who+": two kubelets would share one Node; rename one of the Machines")
			return ctrl.Result{RequeueAfter: secretRetry}, nil
		}
	}
	reportDigest := ""
	if r.ReportURL != "" && s.Spec.Report.URL == "" {
		capability, digest, err := newReportCapability()
		if err != nil {
			return ctrl.Result{}, err
		}
		s.Spec.Report.URL = reportURL(r.ReportURL, cfg.Namespace, cfg.Name, capability)
		reportDigest = digest
	}
	doc, err := specYAML(s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if _, err := spec.Load(doc, "MachineadmConfig "+cfg.Name); err != nil {
		return r.configErr(cfg, err)
	}
	// The recipients too, before the lock, the CAs or a token: sealing
	// would refuse them only after those are made.
	for i, rc := range cfg.Spec.Recipients {
		if _, err := seal.ParseRecipient(rc); err != nil {
			return r.configErr(cfg, fieldError(fmt.Sprintf("spec.recipients[%d]", i), err.Error()))
		}
	}
	if p.action == mspec.ActionInit && replace != nil {
		// Only a join has a token to replace.
		return ctrl.Result{}, nil
	}
	if p.action == mspec.ActionInit {
		r.initLock.set(cl.UID, false)
		ok, err := acquireInitLock(ctx, r.Client, cl, m.Name, cfg.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !ok {
			setData(cfg, metav1.ConditionFalse, ReasonWaitingForInitLock, "another control-plane Machine is initialising the cluster")
			return ctrl.Result{RequeueAfter: lockRetry}, nil
		}
		// A config that fails from here on does not keep the lock: the
		// other control-plane Machines would wait for it forever.
		defer func() {
			if !ptrTrue(cfg.Status.Initialization.DataSecretCreated) {
				if err := releaseInitLock(ctx, r.Client, cl, m.Name); err != nil {
					log.FromContext(ctx).Error(err, "releasing the init lock after a failure")
				}
			}
		}()
	}

	// Secrets.
	if !controllerutil.ContainsFinalizer(cfg, Finalizer) {
		// The finalizer is on the server before the token exists. Patch a
		// copy: the response would overwrite the conditions set so far.
		fin := cfg.DeepCopy()
		controllerutil.AddFinalizer(fin, Finalizer)
		if err := r.Client.Patch(ctx, fin, client.MergeFrom(cfg)); err != nil {
			return ctrl.Result{}, err
		}
		controllerutil.AddFinalizer(cfg, Finalizer)
		cfg.ResourceVersion = fin.ResourceVersion
		if w, ok := ctx.Value(finalizersKey{}).(*finalizersWritten); ok {
			w.list = slices.Clone(fin.Finalizers)
		}
	}
	var secrets []SecretFile
	var tokenID string
	var wc corev1client.CoreV1Interface
	alg := ""
	if cfg.Spec.ControlPlane != nil {
		alg = cfg.Spec.ControlPlane.EncryptionAlgorithm
	}
	if p.controlPlane {
		var cas []SecretFile
		// An external etcd has its own CA: the stacked etcd's CA
		// (<cluster>-etcd with its key) is neither made nor sent.
		withEtcdCA := refs.etcd == nil
		if p.action == mspec.ActionInit {
			cas, err = ensureCAs(ctx, r.Client, cl, alg, withEtcdCA)
		} else {
			cas, err = readCAs(ctx, r.Client, cl, withEtcdCA)
		}
		if err != nil {
			return r.secretErr(cfg, err)
		}
		key, err := ensureCertificateKey(ctx, r.Client, cl, p.action == mspec.ActionInit)
		if err != nil {
			return r.secretErr(cfg, err)
		}
		secrets = append(secrets, SecretFile{Path: certificateKeyPath, Data: []byte(key)})
		if p.action == mspec.ActionInit {
			secrets = append(secrets, cas...)
		} else {
			if wc, err = r.workloadClient(ctx, cl); err != nil {
				return r.secretErr(cfg, err)
			}
			if tokenID, err = r.addToken(ctx, wc, m, &secrets); err != nil {
				return r.secretErr(cfg, err)
			}
			if err := uploadKubeadmCerts(ctx, wc, key, cas, externalEtcdCerts(refs.etcd), tokenID); err != nil {
				r.dropToken(ctx, wc, tokenID)
				return r.secretErr(cfg, err)
			}
		}
	} else {
		if wc, err = r.workloadClient(ctx, cl); err != nil {
			return r.secretErr(cfg, err)
		}
		if tokenID, err = r.addToken(ctx, wc, m, &secrets); err != nil {
			return r.secretErr(cfg, err)
		}
	}

	rd, err := r.sealAndRender(ctx, cfg, m, cl, doc, secrets, refs.known)
	if err != nil {
		r.dropToken(ctx, wc, tokenID)
		var ce *condErr
		if errors.As(err, &ce) {
			setData(cfg, metav1.ConditionFalse, ce.reason, ce.Error())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	data := rd.data
	if n := len(data) + len(rd.payload); n > maxDataBytes {
		r.dropToken(ctx, wc, tokenID)
		setData(cfg, metav1.ConditionFalse, ReasonDataTooLarge, fmt.Sprintf("the bootstrap data is %d bytes, more than a Secret holds (%d) and far more than any cloud's user data (16 to 64 KiB): make spec.host.files and the Secrets they read from smaller, or fetch large files with source.url", n, maxDataBytes))
		return ctrl.Result{}, nil
	}
	ds := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        cfg.Name,
			Namespace:   cfg.Namespace,
			Labels:      map[string]string{clusterv1.ClusterNameLabel: cl.Name},
			Annotations: map[string]string{ActionAnnotation: actionName(p), VersionAnnotation: m.Spec.Version},
		},
		Type: ClusterSecretType,
		Data: map[string][]byte{dataKey: data, formatKey: []byte(format(cfg))},
	}
	if tokenID != "" {
		ds.Annotations[TokenIDAnnotation] = tokenID
	}
	if reportDigest != "" {
		ds.Annotations[ReportDigestAnnotation] = reportDigest
	}
	if rd.payload != nil {
		ds.Data[payloadKey] = rd.payload
		ds.Annotations[PayloadDigestAnnotation] = rd.payloadDigest
	}
	if s.Spec.OS == mspec.OSWindows && s.Spec.Node.Name != "" {
		ds.Annotations[NodeNameAnnotation] = s.Spec.Node.Name
	}
	if err := controllerutil.SetControllerReference(cfg, ds, r.Client.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	if replace != nil {
		return r.replaceData(ctx, cfg, replace, ds, wc, tokenID)
	}
	if err := r.Client.Create(ctx, ds); err != nil {
		r.dropToken(ctx, wc, tokenID)
		if apierrors.IsAlreadyExists(err) {
			// A Secret the cache did not show (of another type, or made a
			// moment ago): read it live, then refuse or adopt it.
			old := &corev1.Secret{}
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(ds), old); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			if !isDataSecretOf(old, cfg) {
				return r.takeExisting(ctx, cfg, m, nil, cl, old, nil)
			}
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("wrote bootstrap data", "secret", ds.Name, "action", actionName(p), "bytes", len(data), "payloadBytes", len(rd.payload))
	cfg.Status.DataSecretName = ds.Name
	cfg.Status.Initialization.DataSecretCreated = ptr(true)
	setData(cfg, metav1.ConditionTrue, ReasonAvailable, "")
	setCond(cfg, BootstrapSucceededCondition, metav1.ConditionUnknown, ReasonWaitingForNode, "waiting for the Machine's Node")
	return ctrl.Result{RequeueAfter: r.ttl() / 4}, nil
}

func (r *Reconciler) addToken(ctx context.Context, wc corev1client.CoreV1Interface, m *clusterv1.Machine, secrets *[]SecretFile) (string, error) {
	tok, err := newToken(ctx, wc, m.Name, r.ttl(), r.now())
	if err != nil {
		return "", err
	}
	*secrets = append(*secrets, SecretFile{Path: tokenPath, Data: []byte(tok)})
	id, _, _ := strings.Cut(tok, ".")
	return id, nil
}

// dropToken deletes a token made for data that was not written.
func (r *Reconciler) dropToken(ctx context.Context, wc corev1client.CoreV1Interface, id string) {
	if wc == nil || id == "" {
		return
	}
	if err := deleteToken(ctx, wc, id); err != nil {
		log.FromContext(ctx).Error(err, "deleting an unused bootstrap token", "tokenID", id)
	}
}

// condErr is a failure reported as a condition rather than retried.
type condErr struct {
	reason string
	err    error
}

func (e *condErr) Error() string { return e.err.Error() }

// sealAndRender seals doc with secrets, renders it and refuses the result
// when the leak check finds a PEM private key, one of the secrets or one
// of refKnown (the secret values read from the Secrets the config refers
// to) in the clear. When the data is over spec.userDataLimit, the sealed
// spec becomes the payload and the data a stub fetching it (withPayload).
func (r *Reconciler) sealAndRender(ctx context.Context, cfg *bootstrapv1.MachineadmConfig, m *clusterv1.Machine, cl *clusterv1.Cluster, doc []byte, secrets []SecretFile, refKnown [][]byte) (*rendered, error) {
	sealed, err := r.Sealer.Seal(ctx, SealRequest{
		Spec: doc, Secrets: secrets, ClusterName: cl.Name, MachineName: m.Name, Recipients: cfg.Spec.Recipients, OS: string(cfg.Spec.OS),
	})
	if err != nil {
		if errors.Is(err, ErrInvalidRecipient) {
			return nil, &condErr{ReasonInvalidConfig, fmt.Errorf("spec.recipients: %w", err)}
		}
		return nil, &condErr{ReasonSealingFailed, err}
	}
	agent, err := r.agentSource(cfg)
	if err != nil {
		return nil, &condErr{ReasonInvalidConfig, err}
	}
	opts := render.Options{
		Format:          render.Format(format(cfg)),
		IgnitionVersion: cfg.Spec.IgnitionVersion,
		Agent:           agent,
	}
	// The clear part of the sealed file is what render checks for inline
	// secrets: they must all be references now.
	clear, _, err := seal.Split(sealed)
	if err != nil {
		return nil, &condErr{ReasonSealingFailed, err}
	}
	sealedCfg, err := spec.Load(clear, "sealed spec")
	if err != nil {
		return nil, &condErr{ReasonSealingFailed, err}
	}
	out, err := render.Render(sealed, sealedCfg.Config, opts)
	if err != nil {
		return nil, renderErr(err)
	}
	known := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		if strings.HasSuffix(s.Path, ".crt") || strings.HasSuffix(s.Path, ".pub") {
			continue // certificates and public keys are not secret
		}
		known = append(known, s.Data)
	}
	for _, v := range refKnown {
		// Searched without the white space around it (a value from a
		// file ends in a newline its leaked copy may lack). A value this
		// short matches ordinary text by chance; it is sealed like the
		// rest but not searched for.
		if t := bytes.TrimSpace(v); len(t) >= minKnownLen {
			known = append(known, t)
		}
	}
	if f := leakcheck.Check(out, leakcheck.Options{Known: known, KnownOnly: true}); len(f) > 0 {
		return nil, &condErr{ReasonLeakRefused, fmt.Errorf("refusing bootstrap data with a secret in the clear: %v", f)}
	}
	return r.withPayload(cfg, &rendered{data: out}, sealed, sealedCfg.Config, opts, known)
}

// renderErr maps a render error to its condition, naming the config's
// field rather than the command-line flag render names it by.
func renderErr(err error) error {
	var oe *render.OptionError
	if errors.As(err, &oe) {
		if f, ok := renderOptionFields[oe.Flag]; ok {
			return &condErr{ReasonInvalidConfig, fmt.Errorf("%s: %s", f, oe.Msg)}
		}
		return &condErr{ReasonInvalidConfig, fmt.Errorf("spec.agent: %w", err)}
	}
	return &condErr{ReasonRenderFailed, err}
}

// renderOptionFields maps the render options the controller sets from a
// MachineadmConfig (by their command-line flag, as render.OptionError
// names them) to the config's field paths.
var renderOptionFields = map[string]string{
	"--agent-url":        "spec.agent.url",
	"--agent-sha256":     "spec.agent.sha256",
	"--format":           "spec.format",
	"--ignition-version": "spec.ignitionVersion",
	"--max-size":         "spec.userDataLimit",
}

// configErr reports an invalid config; it is not retried until it changes.
func (r *Reconciler) configErr(cfg *bootstrapv1.MachineadmConfig, err error) (ctrl.Result, error) {
	setData(cfg, metav1.ConditionFalse, ReasonInvalidConfig, err.Error())
	return ctrl.Result{}, nil
}

// secretErr reports a problem gathering secrets.
func (r *Reconciler) secretErr(cfg *bootstrapv1.MachineadmConfig, err error) (ctrl.Result, error) {
	var missing *MissingCAError
	var invalid *InvalidCAError
	switch {
	case errors.As(err, &invalid):
		setData(cfg, metav1.ConditionFalse, ReasonInvalidCA, err.Error())
		return ctrl.Result{RequeueAfter: secretRetry}, nil
	case errors.As(err, &missing):
		// Secrets are read live, not watched: look again, so that a
		// restored Secret resumes the config.
		setData(cfg, metav1.ConditionFalse, ReasonMissingCA, err.Error())
		return ctrl.Result{RequeueAfter: secretRetry}, nil
	case errors.Is(err, errNoKubeconfig):
		setData(cfg, metav1.ConditionFalse, ReasonWaitingForKubeconfig, err.Error())
		return ctrl.Result{RequeueAfter: lockRetry}, nil
	}
	setData(cfg, metav1.ConditionFalse, ReasonWorkloadUnreachable, err.Error())
	return ctrl.Result{}, err
}

// format is the config's format, by default cloud-config, or powershell
// for os windows.
func format(cfg *bootstrapv1.MachineadmConfig) bootstrapv1.Format {
	if cfg.Spec.Format == "" && cfg.Spec.OS == bootstrapv1.OSWindows {
		return bootstrapv1.FormatPowerShell
	}
	if cfg.Spec.Format == "" {
		return bootstrapv1.FormatCloudConfig
	}
	return cfg.Spec.Format
}

func actionName(p plan) string {
	switch {
	case p.action == mspec.ActionInit:
		return "init"
	case p.controlPlane:
		return "control-plane-join"
	}
	return "join"
}

func ptr[T any](v T) *T { return &v }

func ptrTrue(b *bool) bool { return b != nil && *b }

func hasAnnotation(o client.Object, k string) bool { _, ok := o.GetAnnotations()[k]; return ok }

func findCond(cfg *bootstrapv1.MachineadmConfig, t string) *metav1.Condition {
	for i := range cfg.Status.Conditions {
		if cfg.Status.Conditions[i].Type == t {
			return &cfg.Status.Conditions[i]
		}
	}
	return nil
}

func schemaGroup(apiVersion string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return gv.Group, err
}
