//go:build !windows

package controller

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/report/nodeannotation"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
)

func TestWorkerDataSecret(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.machine("w1", false)
	c := f.reconcile("w1")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	wantCond(t, c, ReadyCondition, metav1.ConditionTrue, ReasonAvailable)
	wantCond(t, c, BootstrapSucceededCondition, metav1.ConditionUnknown, ReasonWaitingForNode)
	if c.Status.DataSecretName != "w1" || !ptrTrue(c.Status.Initialization.DataSecretCreated) {
		t.Fatalf("status: %+v", c.Status)
	}
	ds := f.dataSecret("w1")
	if ds.Type != ClusterSecretType || string(ds.Data["format"]) != "cloud-config" || ds.Labels[clusterv1.ClusterNameLabel] != "c1" {
		t.Fatalf("data Secret: type %q format %q labels %v", ds.Type, ds.Data["format"], ds.Labels)
	}
	if o := metav1.GetControllerOf(ds); o == nil || o.Kind != "MachineadmConfig" || o.UID != c.UID {
		t.Fatalf("data Secret controller %+v, want the config", o)
	}
	id := ds.Annotations[TokenIDAnnotation]
	tok, ok := tokenExists(t, id)
	if id == "" || !ok {
		t.Fatalf("token %q not in the workload cluster", id)
	}
	full := []byte(id + "." + string(tok.Data["token-secret"]))
	f.noLeak(ds, full)
	t.Logf("worker join data: %d bytes", len(ds.Data["value"]))
	clear, items := f.opened(ds.Data["value"])
	if !contains(clear, "role: Worker", "action: Join", "apiServerEndpoint: 10.0.0.10:6443", "sha256:", "tier: test", "br_netfilter", "clusterName: c1", "version: v1.37.2", "podSubnet: 10.244.0.0/16") {
		t.Fatalf("clear spec lacks expected fields:\n%s", clear)
	}
	if got := string(items["spec.join.token"]); got != string(full) {
		t.Fatalf("sealed token %q is not the workload token", got)
	}
	hash, err := (&Reconciler{Client: k8s}).caCertHashOf(f.ctx, f.cluster)
	f.must(err)
	if !strings.Contains(clear, hash) {
		t.Fatalf("clear spec does not pin the cluster CA %s", hash)
	}
	// A rerun changes nothing: no second token, same data.
	before := ds.Data["value"]
	f.reconcile("w1")
	if again := f.dataSecret("w1"); string(again.Data["value"]) != string(before) || again.Annotations[TokenIDAnnotation] != id {
		t.Fatal("a second reconcile rewrote the data Secret")
	}
}

func TestWorkerWaitsForInfrastructureAndInit(t *testing.T) {
	f := newFixture(t)
	f.setClusterStatus(false, false)
	f.machine("w1", false)
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonWaitingForInfrastructure)
	f.setClusterStatus(true, false)
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonWaitingForInit)
	f.initialized()
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
}

func TestControlPlaneInit(t *testing.T) {
	f := newFixture(t)
	f.machine("cp1", true)
	c := f.reconcile("cp1")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("cp1")
	if ds.Annotations[ActionAnnotation] != "init" || ds.Annotations[TokenIDAnnotation] != "" {
		t.Fatalf("annotations %v: want action init and no token", ds.Annotations)
	}
	var known [][]byte
	for _, ca := range caSet {
		s := &corev1.Secret{}
		f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-" + ca.suffix}, s))
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Cluster" || s.OwnerReferences[0].UID != f.cluster.UID {
			t.Fatalf("%s owners %+v: want the Cluster only", s.Name, s.OwnerReferences)
		}
		known = append(known, s.Data["tls.key"])
	}
	key, err := ensureCertificateKey(f.ctx, k8s, f.cluster, false)
	f.must(err)
	known = append(known, []byte(key))
	f.noLeak(ds, known...)
	// AWS caps user data at 16 KB.
	if n := len(ds.Data["value"]); n > 16384 {
		t.Fatalf("control-plane init data is %d bytes, over 16 KiB", n)
	} else {
		t.Logf("control-plane init data: %d bytes", n)
	}
	clear, items := f.opened(ds.Data["value"])
	if !contains(clear, "role: ControlPlane", "action: Init", "controlPlaneEndpoint: 10.0.0.10:6443") || strings.Contains(clear, "join:") {
		t.Fatalf("clear spec:\n%s", clear)
	}
	if string(items["spec.controlPlane.certificateKey"]) != key {
		t.Fatal("the sealed certificate key is not the Cluster's")
	}
	if _, ok := items[sealspec.PKIDirItem]; !ok {
		t.Fatalf("sealed items %v lack the CA set", keys(items))
	}
	lock := &corev1.ConfigMap{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: initLockName("c1")}, lock))
	if lock.Data[lockHolderKey] != "cp1" {
		t.Fatalf("init lock held by %q", lock.Data[lockHolderKey])
	}
	// Once the control plane is initialised the lock goes, and a CA is
	// never made again: a missing one is a condition naming it.
	f.setClusterStatus(true, true)
	f.reconcile("cp1")
	if err := k8s.Get(f.ctx, client.ObjectKeyFromObject(lock), lock); !apierrors.IsNotFound(err) {
		t.Fatalf("init lock still there after init: %v", err)
	}
	etcd := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-etcd", Namespace: f.ns}}
	f.must(k8s.Delete(f.ctx, etcd))
	f.machine("cp2", true)
	got := wantCond(t, f.reconcile("cp2"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonMissingCA)
	if !strings.Contains(got.Message, "c1-etcd") {
		t.Fatalf("condition message %q does not name c1-etcd", got.Message)
	}
	if err := k8s.Get(f.ctx, client.ObjectKeyFromObject(etcd), etcd); !apierrors.IsNotFound(err) {
		t.Fatal("c1-etcd was regenerated after init")
	}
}

func TestExistingCAsAreUsed(t *testing.T) {
	f := newFixture(t)
	// Another Cluster API component made the CA set.
	_, err := ensureCAs(f.ctx, k8s, f.cluster, "ECDSA-P384", true)
	f.must(err)
	ca := &corev1.Secret{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-ca"}, ca))
	f.machine("cp1", true)
	f.reconcile("cp1")
	after := &corev1.Secret{}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(ca), after))
	if string(after.Data["tls.crt"]) != string(ca.Data["tls.crt"]) || after.ResourceVersion != ca.ResourceVersion {
		t.Fatal("an existing CA Secret was changed")
	}
}

func TestSecondControlPlaneJoin(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.machine("cp2", true)
	c := f.reconcile("cp2")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("cp2")
	if ds.Annotations[ActionAnnotation] != "control-plane-join" {
		t.Fatalf("action %q", ds.Annotations[ActionAnnotation])
	}
	id := ds.Annotations[TokenIDAnnotation]
	tok, ok := tokenExists(t, id)
	if !ok {
		t.Fatal("no join token")
	}
	key, err := ensureCertificateKey(f.ctx, k8s, f.cluster, false)
	f.must(err)
	f.noLeak(ds, []byte(id+"."+string(tok.Data["token-secret"])), []byte(key))
	clear, items := f.opened(ds.Data["value"])
	if !contains(clear, "role: ControlPlane", "action: Join", "certificateKey:") || strings.Contains(clear, "pki:\n      dir") {
		t.Fatalf("clear spec:\n%s", clear)
	}
	if string(items["spec.controlPlane.certificateKey"]) != key {
		t.Fatal("sealed certificate key differs")
	}
	if _, ok := items[sealspec.PKIDirItem]; ok {
		t.Fatal("a joining control plane got the CA keys in its data; it downloads them with the certificate key")
	}
	// kubeadm-certs holds the CA set encrypted with the key, owned by the
	// join token, the way kubeadm's upload-certs writes it.
	kc, err := workload.CoreV1().Secrets("kube-system").Get(context.Background(), kubeadmCertsName, metav1.GetOptions{})
	f.must(err)
	if !hasOwner(kc.OwnerReferences, tok.UID) {
		t.Fatalf("kubeadm-certs owners %+v lack the join token", kc.OwnerReferences)
	}
	ca := &corev1.Secret{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-ca"}, ca))
	if got := decrypt(t, key, kc.Data["ca.key"]); string(got) != string(ca.Data["tls.key"]) {
		t.Fatal("kubeadm-certs ca.key does not decrypt to the cluster CA key")
	}
	for _, k := range []string{"ca.crt", "etcd-ca.crt", "etcd-ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "sa.key", "sa.pub"} {
		if len(kc.Data[k]) == 0 {
			t.Errorf("kubeadm-certs lacks %s", k)
		}
	}
}

func decrypt(t *testing.T, key string, data []byte) []byte {
	k, _ := hex.DecodeString(key)
	b, _ := aes.NewCipher(k)
	g, _ := cipher.NewGCM(b)
	out, err := g.Open(nil, data[:g.NonceSize()], data[g.NonceSize():], nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestInitLockTwoControlPlanesAtOnce(t *testing.T) {
	f := newFixture(t)
	f.machine("cp-a", true)
	f.machine("cp-b", true)
	var wg sync.WaitGroup
	for _, n := range []string{"cp-a", "cp-b"} {
		wg.Go(func() {
			for range 3 {
				if _, err := f.r.Reconcile(f.ctx, reqFor(f.ns, n)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var inits, waiting []string
	for _, n := range []string{"cp-a", "cp-b"} {
		s := &corev1.Secret{}
		err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: n}, s)
		switch {
		case err == nil && s.Annotations[ActionAnnotation] == "init":
			inits = append(inits, n)
		case apierrors.IsNotFound(err):
			c := &bootstrapv1.MachineadmConfig{}
			f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: n}, c))
			wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionFalse, ReasonWaitingForInitLock)
			waiting = append(waiting, n)
		default:
			t.Fatalf("%s: %v %v", n, err, s.Annotations)
		}
	}
	if len(inits) != 1 || len(waiting) != 1 {
		t.Fatalf("init %v, waiting %v: want exactly one of each", inits, waiting)
	}
	// After init the other one joins.
	f.setClusterStatus(true, true)
	wantCond(t, f.reconcile(waiting[0]), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	if a := f.dataSecret(waiting[0]).Annotations[ActionAnnotation]; a != "control-plane-join" {
		t.Fatalf("second control plane: action %q", a)
	}
}

func TestInitLockOfAGoneMachineIsBroken(t *testing.T) {
	f := newFixture(t)
	ok, err := acquireInitLock(f.ctx, k8s, f.cluster, "vanished", "vanished")
	f.must(err)
	if !ok {
		t.Fatal("lock not taken")
	}
	f.machine("cp1", true)
	wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonWaitingForInitLock)
	wantCond(t, f.reconcile("cp1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
}

func TestTokenRefreshAndCleanup(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	m, _ := f.machine("w1", false)
	f.reconcile("w1")
	id := f.dataSecret("w1").Annotations[TokenIDAnnotation]
	tok, _ := tokenExists(t, id)
	exp0 := string(tok.Data["expiration"])
	// Half the TTL later the token is refreshed to a full TTL again.
	f.now = f.now.Add(DefaultTokenTTL / 2)
	f.reconcile("w1")
	tok, _ = tokenExists(t, id)
	if exp1 := string(tok.Data["expiration"]); exp1 <= exp0 || exp1 != f.now.Add(DefaultTokenTTL).UTC().Format("2006-01-02T15:04:05Z07:00") {
		t.Fatalf("expiration %s -> %s: not refreshed to now+TTL", exp0, exp1)
	}
	// A tenth of the TTL later it is left alone.
	f.now = f.now.Add(DefaultTokenTTL / 10)
	f.reconcile("w1")
	if tok2, _ := tokenExists(t, id); string(tok2.Data["expiration"]) != string(tok.Data["expiration"]) {
		t.Fatal("token refreshed too early")
	}
	// The Machine gets a Node: the token goes, the outcome is mirrored.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-w1"}}
	f.must(k8s.Create(f.ctx, node))
	t.Cleanup(func() { k8s.Delete(context.Background(), node) })
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: node.Name}
	f.must(k8s.Status().Update(f.ctx, m))
	c := f.reconcile("w1")
	if _, ok := tokenExists(t, id); ok {
		t.Fatal("token still exists after the Machine got its Node")
	}
	if a := f.dataSecret("w1").Annotations[TokenIDAnnotation]; a != "" {
		t.Fatalf("token annotation %q left", a)
	}
	wantCond(t, c, BootstrapSucceededCondition, metav1.ConditionUnknown, ReasonWaitingForReport)

	node.Annotations = map[string]string{nodeannotation.Annotation: `{"result":"Succeeded","command":"bootstrap","action":"Join","durationMs":4200,"phases":12,"machineadmVersion":"v0.1.0"}`}
	f.must(k8s.Update(f.ctx, node))
	c = f.reconcile("w1")
	got := wantCond(t, c, BootstrapSucceededCondition, metav1.ConditionTrue, ReasonSucceeded)
	if !strings.Contains(got.Message, "4200ms") || c.Status.Outcome == nil || c.Status.Outcome.MachineadmVersion != "v0.1.0" {
		t.Fatalf("outcome %+v, message %q", c.Status.Outcome, got.Message)
	}
}

func TestFailedOutcomeCarriesPhaseClassHint(t *testing.T) {
	cfg := &bootstrapv1.MachineadmConfig{}
	o, err := parseOutcome(`{"result":"Failed","failedPhase":"inputs-check","errorClass":"VerificationFailed","hint":"the sealed envelope did not open with this machine's identity"}`)
	if err != nil {
		t.Fatal(err)
	}
	applyOutcome(cfg, o)
	got := wantCond(t, cfg, BootstrapSucceededCondition, metav1.ConditionFalse, "VerificationFailed")
	if !contains(got.Message, "phase inputs-check failed", "class VerificationFailed", "hint: the sealed envelope") {
		t.Fatalf("message %q", got.Message)
	}
	if _, err := parseOutcome(`{"command":"bootstrap"}`); err == nil {
		t.Fatal("an annotation without result was accepted")
	}
	if _, err := parseOutcome(`not json`); err == nil {
		t.Fatal("a malformed annotation was accepted")
	}
}

func TestPausedCluster(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.cluster.Spec.Paused = ptr(true)
	f.must(k8s.Update(f.ctx, f.cluster))
	f.machine("w1", false)
	c := f.reconcile("w1")
	wantCond(t, c, PausedCondition, metav1.ConditionTrue, ReasonPaused)
	if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "w1"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a paused cluster got a data Secret: %v", err)
	}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(f.cluster), f.cluster))
	f.cluster.Spec.Paused = ptr(false)
	f.must(k8s.Update(f.ctx, f.cluster))
	c = f.reconcile("w1")
	wantCond(t, c, PausedCondition, metav1.ConditionFalse, ReasonNotPaused)
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	// The paused annotation on the config alone also pauses it.
	c.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
	f.must(k8s.Update(f.ctx, c))
	wantCond(t, f.reconcile("w1"), PausedCondition, metav1.ConditionTrue, ReasonPaused)
}

func TestDeletion(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.machine("w1", false)
	c := f.reconcile("w1")
	if !containsString(c.Finalizers, Finalizer) {
		t.Fatalf("finalizers %v", c.Finalizers)
	}
	id := f.dataSecret("w1").Annotations[TokenIDAnnotation]
	f.must(k8s.Delete(f.ctx, c))
	if got := f.reconcile("w1"); got != nil {
		t.Fatalf("config still there with finalizers %v", got.Finalizers)
	}
	if _, ok := tokenExists(t, id); ok {
		t.Fatal("token not deleted with the config")
	}
	// The data Secret is owned by the config, so the garbage collector
	// removes it; the Cluster's CA Secrets are not.
	ds := f.dataSecret("w1")
	if o := metav1.GetControllerOf(ds); o == nil || o.Kind != "MachineadmConfig" {
		t.Fatalf("data Secret owner %+v", o)
	}

	// Deleting the init holder's config releases the lock.
	g := newFixture(t)
	g.machine("cp1", true)
	cp := g.reconcile("cp1")
	g.must(k8s.Delete(g.ctx, cp))
	g.reconcile("cp1")
	if err := k8s.Get(g.ctx, client.ObjectKey{Namespace: g.ns, Name: initLockName("c1")}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("init lock left after its holder's config was deleted: %v", err)
	}
	ca := &corev1.Secret{}
	g.must(k8s.Get(g.ctx, client.ObjectKey{Namespace: g.ns, Name: "c1-ca"}, ca))
	if metav1.GetControllerOf(ca) != nil || ca.OwnerReferences[0].Kind != "Cluster" {
		t.Fatalf("CA owners %+v", ca.OwnerReferences)
	}
}

func TestClusterctlMoveAdoption(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.machine("w1", false)
	f.reconcile("w1")
	f.namesData("w1")
	ds := f.dataSecret("w1")
	id := ds.Annotations[TokenIDAnnotation]
	// clusterctl move: the config arrives without status.
	c := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "w1"}, c))
	c.Status = bootstrapv1.MachineadmConfigStatus{}
	f.must(k8s.Status().Update(f.ctx, c))
	c = f.reconcile("w1")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAdopted)
	if c.Status.DataSecretName != "w1" || !ptrTrue(c.Status.Initialization.DataSecretCreated) {
		t.Fatalf("status after adoption %+v", c.Status)
	}
	after := f.dataSecret("w1")
	if string(after.Data["value"]) != string(ds.Data["value"]) || after.Annotations[TokenIDAnnotation] != id {
		t.Fatal("adoption re-rendered the data or made a new token")
	}
	if _, ok := tokenExists(t, id); !ok {
		t.Fatal("adoption lost the token")
	}
	if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: initLockName("c1")}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatal("adoption took the init lock")
	}
}

// admissionCase is one invalid MachineadmConfig: edit breaks a valid spec,
// and the API server's refusal must name path.
type admissionCase struct {
	edit func(*bootstrapv1.MachineadmConfigSpec)
	path string
}

// refusedWithPath creates, for each case, a config from f's valid spec
// edited by the case, and fails unless the API server refuses it as
// Invalid with an error naming the case's field path.
func refusedWithPath(t *testing.T, f *fixture, cases map[string]admissionCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &bootstrapv1.MachineadmConfig{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-", Namespace: f.ns}, Spec: f.spec()}
			tc.edit(&c.Spec)
			err := k8s.Create(f.ctx, c)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want Invalid, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("error does not name %s: %v", tc.path, err)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

func TestInvalidConfigsRefusedWithFieldPath(t *testing.T) {
	f := newFixture(t)
	cases := map[string]admissionCase{
		"http agent without digest":  {func(s *bootstrapv1.MachineadmConfigSpec) { s.Agent.SHA256 = "" }, "spec.agent.sha256"},
		"agent url with credentials": {func(s *bootstrapv1.MachineadmConfigSpec) { s.Agent.URL = "https://u:p@x.invalid/m" }, "spec.agent.url"},
		"agent url with a control character": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Agent.URL = "file:///usr/local/bin/machineadm\x1b]0;owned\x07"
		}, "spec.agent.url"},
		"recipient with a control character": {func(s *bootstrapv1.MachineadmConfigSpec) { s.Recipients = []string{"age1\x1b[2J"} }, "spec.recipients[0]"},
		"file source url with a NUL": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Files = []bootstrapv1.File{{Path: "/etc/x", Source: &bootstrapv1.RemoteSource{URL: "https://x.invalid/f\x00", SHA256: agentSHA}}}
		}, "spec.host.files[0].source.url"},
		"no recipients":                     {func(s *bootstrapv1.MachineadmConfigSpec) { s.Recipients = nil }, "spec.recipients"},
		"bad recipient":                     {func(s *bootstrapv1.MachineadmConfigSpec) { s.Recipients = []string{"rsa:xyz"} }, "spec.recipients[0]"},
		"bad format":                        {func(s *bootstrapv1.MachineadmConfigSpec) { s.Format = "shell" }, "spec.format"},
		"ignition version without ignition": {func(s *bootstrapv1.MachineadmConfigSpec) { s.IgnitionVersion = "3.4.0" }, "spec.ignitionVersion"},
		"taint effect": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Node.Taints = &[]bootstrapv1.Taint{{Key: "k", Effect: "Sometimes"}}
		}, "spec.node.taints[0].effect"},
		"relative file path": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Files = []bootstrapv1.File{{Path: "etc/x", Content: "x"}}
		}, "spec.host.files[0].path"},
		"content and source": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Files = []bootstrapv1.File{{Path: "/etc/x", Content: "x", Source: &bootstrapv1.RemoteSource{URL: "https://x.invalid/f", SHA256: agentSHA}}}
		}, "spec.host.files[0]"},
		"sysctl key": {func(s *bootstrapv1.MachineadmConfigSpec) { s.Host.Sysctl = map[string]string{"Not A Key": "1"} }, "spec.host.sysctl"},
		"proxy credentials": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Containerd = &bootstrapv1.Containerd{Proxy: &bootstrapv1.Proxy{HTTPProxy: "http://user:pw@proxy:3128"}}
		}, "spec.host.containerd.proxy.httpProxy"},
		"file mode": {func(s *bootstrapv1.MachineadmConfigSpec) {
			s.Host.Files = []bootstrapv1.File{{Path: "/etc/x", Mode: "999"}}
		}, "spec.host.files[0].mode"},
	}
	refusedWithPath(t, f, cases)
	// The template carries the same validation.
	tpl := &bootstrapv1.MachineadmConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tpl", Namespace: f.ns},
		Spec: bootstrapv1.MachineadmConfigTemplateSpec{Template: bootstrapv1.MachineadmConfigTemplateResource{Spec: f.spec()}}}
	tpl.Spec.Template.Spec.Agent.SHA256 = "nothex"
	if err := k8s.Create(f.ctx, tpl); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.template.spec.agent.sha256") {
		t.Fatalf("template: %v", err)
	}
}

// A config the API server accepts but the machine spec's own validation
// refuses gets InvalidConfig naming the field, and no token is made.
func TestMachineSpecValidationNamesField(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	_, c := f.machine("w1", false)
	c.Spec.Node.Labels = map[string]string{"node-role.kubernetes.io/worker": ""}
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.Contains(got.Message, "spec.node.labels") {
		t.Fatalf("message %q does not name spec.node.labels", got.Message)
	}
	// A worker with controlPlane settings is refused too.
	_, c2 := f.machine("w2", false)
	c2.Spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{BindPort: 7443}
	f.must(k8s.Update(f.ctx, c2))
	got = wantCond(t, f.reconcile("w2"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.Contains(got.Message, "spec.controlPlane") {
		t.Fatalf("message %q", got.Message)
	}
}

func TestIgnitionFormat(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	_, c := f.machine("w1", false)
	c.Spec.Format = bootstrapv1.FormatIgnition
	f.must(k8s.Update(f.ctx, c))
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("w1")
	if string(ds.Data["format"]) != "ignition" || !strings.HasPrefix(string(ds.Data["value"]), "{") {
		t.Fatalf("format %q, data starts %q", ds.Data["format"], string(ds.Data["value"])[:10])
	}
	tok, _ := tokenExists(t, ds.Annotations[TokenIDAnnotation])
	f.noLeak(ds, []byte(ds.Annotations[TokenIDAnnotation]+"."+string(tok.Data["token-secret"])))
}

func TestNoSealerNoData(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.r.Sealer = nil
	f.machine("w1", false)
	wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonSealerUnavailable)
	if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "w1"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatal("data Secret written without a sealer")
	}
}

func reqFor(ns, name string) ctrlRequest {
	return ctrlRequest{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// An agent URL the CRD's pattern admits but render refuses (for Ignition,
// a file path a systemd unit cannot take as it is) is InvalidConfig naming
// the config's field, spec.agent.url, not render's command-line flag.
func TestAgentURLRefusedByRenderNamesField(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	_, c := f.machine("w1", false)
	c.Spec.Format = bootstrapv1.FormatIgnition
	c.Spec.Agent.URL = "file:///usr/local/bin/machine$adm"
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile("w1"), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.HasPrefix(got.Message, "spec.agent.url: ") || strings.Contains(got.Message, "--agent-url") {
		t.Fatalf("message %q, want it to name spec.agent.url", got.Message)
	}
}
