package controller

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// What the controller reads of Secrets, and from where.
//
// Secret contents are never cached: the manager's client reads every
// Secret live (manager.ClientOptions), so a Secret a config refers to is
// always current and no key or token sits in an informer. What is cached
// is the metadata (name, labels, annotations, owner references,
// resourceVersion) of the Secrets of Cluster API's type
// cluster.x-k8s.io/secret (SecretCacheOptions): the data Secrets, the
// Cluster's CA and kubeconfig Secrets. With that metadata (Reconciler.SecretMeta):
//
//   - a data Secret is looked up in the cache; one the cache does not see
//     (a Secret of another type with the config's name, or one created a
//     moment ago) is read live before anything is concluded from its
//     absence (dataSecretMeta);
//   - the CA certificate's hash and the workload cluster's client are
//     kept per Secret resourceVersion and made again when the cached
//     resourceVersion changes; a Secret the cache does not see (of another
//     type) is read live every time (secretMemo).

// SecretCacheOptions restricts the manager's cache of Secrets to Cluster
// API's Secret type, cluster.x-k8s.io/secret, by field selector, and
// strips managedFields from every cached object (Machines and configs
// carry several kilobytes of them). Only the metadata of those Secrets is
// cached (Reconciler.SecretMeta reads metav1.PartialObjectMetadata), and
// of their annotations only this controller's (secretAnnotationPrefix):
// another's may hold the Secret's data (kubectl apply's
// last-applied-configuration of a CA Secret holds its key).
func SecretCacheOptions() cache.Options {
	strip := cache.TransformStripManagedFields()
	return cache.Options{
		DefaultTransform: strip,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {
				Field: fields.OneTermEqualSelector("type", string(ClusterSecretType)),
				Transform: func(in any) (any, error) {
					out, err := strip(in)
					if o, ok := out.(metav1.Object); ok && err == nil {
						o.SetAnnotations(ownAnnotations(o.GetAnnotations()))
					}
					return out, err
				},
			},
		},
	}
}

// secretAnnotationPrefix starts the annotations this controller writes on
// its data Secrets and reads back (TokenIDAnnotation, ActionAnnotation and
// the rest).
const secretAnnotationPrefix = "bootstrap.machineadm.io/"

// ownAnnotations returns the annotations of a that start with
// secretAnnotationPrefix, nil when there are none.
func ownAnnotations(a map[string]string) map[string]string {
	var out map[string]string
	for k, v := range a {
		if strings.HasPrefix(k, secretAnnotationPrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// secretMeta returns the cached metadata of Secret key, or nil when the
// cache does not have it (or there is no cache).
func (r *Reconciler) secretMeta(ctx context.Context, key client.ObjectKey) (*metav1.PartialObjectMetadata, error) {
	if r.SecretMeta == nil {
		return nil, nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.SecretMeta.Get(ctx, key, m); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return m, nil
}

// dataSecretMeta returns the data Secret key with its metadata and type
// (no data), from the metadata cache when it has it, else read live. A
// NotFound error means it does not exist on the API server.
func (r *Reconciler) dataSecretMeta(ctx context.Context, key client.ObjectKey) (*corev1.Secret, error) {
	m, err := r.secretMeta(ctx, key)
	if err != nil {
		return nil, err
	}
	if m != nil {
		// The cache holds only Secrets of Cluster API's type.
		return &corev1.Secret{ObjectMeta: *m.ObjectMeta.DeepCopy(), Type: ClusterSecretType}, nil
	}
	s := &corev1.Secret{}
	if err := r.Client.Get(ctx, key, s); err != nil {
		return nil, err
	}
	return s, nil
}

// secretMemo keeps a value derived from a Secret's content (a CA hash, a
// workload client) per Secret and resourceVersion. An entry not used for
// memoIdle goes when another is added: a deleted Cluster's entries (its
// workload client holds a clientset and a connection pool) are not asked
// for again.
type secretMemo[T any] struct {
	mu sync.Mutex
	m  map[client.ObjectKey]memoEntry[T]
}

type memoEntry[T any] struct {
	rv   string
	v    T
	used time.Time
}

// memoIdle is how long a secretMemo entry stays unused before it may go.
const memoIdle = 10 * time.Minute

// get returns the value for Secret key: the one kept when the cached
// metadata shows the same resourceVersion, else build applied to the
// Secret read live (kept when the cache sees that Secret). A Secret that
// does not exist is build's to report: it gets (nil, NotFound) and nothing
// is kept.
func (sm *secretMemo[T]) get(ctx context.Context, r *Reconciler, key client.ObjectKey, build func(*corev1.Secret, error) (T, error)) (T, error) {
	var zero T
	meta, err := r.secretMeta(ctx, key)
	if err != nil {
		return zero, err
	}
	now := r.now()
	if meta != nil {
		sm.mu.Lock()
		e, ok := sm.m[key]
		if ok && e.rv == meta.ResourceVersion {
			e.used = now
			sm.m[key] = e
		}
		sm.mu.Unlock()
		if ok && e.rv == meta.ResourceVersion {
			return e.v, nil
		}
	}
	s := &corev1.Secret{}
	if err := r.Client.Get(ctx, key, s); err != nil {
		return build(nil, err)
	}
	v, err := build(s, nil)
	if err != nil || meta == nil {
		return v, err
	}
	sm.mu.Lock()
	if sm.m == nil {
		sm.m = map[client.ObjectKey]memoEntry[T]{}
	}
	for k, e := range sm.m {
		if now.Sub(e.used) > memoIdle {
			delete(sm.m, k)
		}
	}
	sm.m[key] = memoEntry[T]{rv: s.ResourceVersion, v: v, used: now}
	sm.mu.Unlock()
	return v, nil
}

// statusMemo remembers the configs whose data Secret this process wrote
// into their status a moment ago, with the resourceVersions the config had
// before that patch, so that a reconcile reading one of those versions
// from a cache that has not caught up yet (an event of the finalizer patch
// made before the status patch) does not take the data Secret it finds for
// one to adopt, overwriting the conditions just written. Such a reconcile
// does nothing: the status patch's own event follows. A version this
// process did not see before its patch (the status cleared by someone
// else, as clusterctl move leaves it) is reconciled as usual.
type statusMemo struct {
	mu sync.Mutex
	m  map[types.UID]statusWrite
}

type statusWrite struct {
	at     time.Time
	before []string // resourceVersions older than the status patch
}

// statusLag bounds how long a cache may lag behind a status patch before
// the config is reconciled from what the cache says anyway.
const statusLag = 30 * time.Second

// wrote records a status patch of config uid that recorded its data
// Secret, made at now over the config at resourceVersions before.
func (sm *statusMemo) wrote(uid types.UID, now time.Time, before ...string) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.m == nil {
		sm.m = map[types.UID]statusWrite{}
	}
	// Entries go when their config is read up to date; those of configs
	// deleted before that go here.
	for k, w := range sm.m {
		if now.Sub(w.at) > statusLag {
			delete(sm.m, k)
		}
	}
	sm.m[uid] = statusWrite{at: now, before: before}
}

// stale reports whether config uid, read at resourceVersion rv with
// created its status's dataSecretCreated, is a version older than a
// status patch this process made less than statusLag ago.
func (sm *statusMemo) stale(uid types.UID, rv string, created bool, now time.Time) bool {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	w, ok := sm.m[uid]
	if !ok {
		return false
	}
	if created || now.Sub(w.at) > statusLag {
		delete(sm.m, uid)
		return false
	}
	return slices.Contains(w.before, rv)
}

// caCertHashOf is caCertHash through the Reconciler's memo.
func (r *Reconciler) caCertHashOf(ctx context.Context, cl *clusterv1.Cluster) (string, error) {
	key := client.ObjectKey{Namespace: cl.Namespace, Name: secretName(cl.Name, "ca")}
	return r.caHashes.get(ctx, r, key, func(s *corev1.Secret, err error) (string, error) {
		if err != nil {
			if apierrors.IsNotFound(err) {
				return "", &MissingCAError{Name: key.Name}
			}
			return "", err
		}
		return caCertHashFrom(s)
	})
}

// workloadClient returns the Cluster's workload client: r.WorkloadClient
// when set, else one built from the Cluster's kubeconfig Secret and kept
// while that Secret's resourceVersion stays the same.
func (r *Reconciler) workloadClient(ctx context.Context, cl *clusterv1.Cluster) (corev1client.CoreV1Interface, error) {
	if r.WorkloadClient != nil || r.SecretMeta == nil {
		return r.workload()(ctx, r.Client, cl)
	}
	key := client.ObjectKey{Namespace: cl.Namespace, Name: secretName(cl.Name, "kubeconfig")}
	return r.workloads.get(ctx, r, key, func(s *corev1.Secret, err error) (corev1client.CoreV1Interface, error) {
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil, kubeconfigMissing(key.Name)
			}
			return nil, err
		}
		return workloadFromSecret(s)
	})
}

// lockMemo remembers the Clusters (by UID) whose init lock this process
// found gone or deleted after their control plane was initialised, so
// that reconciles after that do not read the lock again: once a Cluster
// is initialised no config takes its lock (renderData takes it only for
// init data, and forgets the Cluster here before it tries).
type lockMemo struct {
	mu   sync.Mutex
	gone map[types.UID]bool
}

func (lm *lockMemo) released(uid types.UID) bool {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	return lm.gone[uid]
}

func (lm *lockMemo) set(uid types.UID, gone bool) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if !gone {
		delete(lm.gone, uid)
		return
	}
	if lm.gone == nil {
		lm.gone = map[types.UID]bool{}
	}
	lm.gone[uid] = true
}
