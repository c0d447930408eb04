//go:build !windows

package controller

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// pool makes a MachinePool of the fixture's Cluster and its config.
func (f *fixture) pool(name string) {
	f.t.Helper()
	p := &clusterv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
		Spec: clusterv1.MachinePoolSpec{
			ClusterName: "c1",
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: "c1",
				Version:     "v1.37.2",
				Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: bootstrapv1.GroupVersion.Group, Kind: "MachineadmConfig", Name: name,
				}},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.e2e.machineadm.io", Kind: "NspawnMachinePool", Name: name},
			}},
		},
	}
	f.must(k8s.Create(f.ctx, p))
	f.must(k8s.Create(f.ctx, &bootstrapv1.MachineadmConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: f.ns,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachinePool", Name: p.Name, UID: p.UID}},
		},
		Spec: f.spec(),
	}))
	if reqs := poolToConfig(f.ctx, p); len(reqs) != 1 || reqs[0].Name != name {
		f.t.Fatalf("the pool maps to %v", reqs)
	}
}

// A config owned by a MachinePool gets one worker-join data Secret (it
// waited forever before); its token is rotated before it expires, and when
// deleted, with the same Secret written again; the old token is left to
// expire.
func TestMachinePoolDataAndTokenRotation(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.pool("pool1")
	c := f.reconcile("pool1")
	wantCond(t, c, ReadyCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret("pool1")
	id0 := ds.Annotations[TokenIDAnnotation]
	if ds.Annotations[ActionAnnotation] != "join" || id0 == "" {
		t.Fatalf("pool data: action %q, token %q", ds.Annotations[ActionAnnotation], id0)
	}
	if _, ok := tokenExists(t, id0); !ok {
		t.Fatal("no token for the pool")
	}
	f.noLeak(ds)

	// Half the TTL later: still more than a third left, nothing changes.
	f.now = f.now.Add(DefaultTokenTTL / 2)
	f.reconcile("pool1")
	if got := f.dataSecret("pool1").Annotations[TokenIDAnnotation]; got != id0 {
		t.Fatalf("token rotated too early: %s -> %s", id0, got)
	}
	// Three quarters: less than a third left, rotated.
	f.now = f.now.Add(DefaultTokenTTL / 4)
	c = f.reconcile("pool1")
	wantCond(t, c, ReadyCondition, metav1.ConditionTrue, ReasonTokenRotated)
	after := f.dataSecret("pool1")
	id1 := after.Annotations[TokenIDAnnotation]
	if id1 == "" || id1 == id0 || after.UID != ds.UID || bytes.Equal(after.Data["value"], ds.Data["value"]) {
		t.Fatalf("token %s -> %s, same Secret %v, data changed %v", id0, id1, after.UID == ds.UID, !bytes.Equal(after.Data["value"], ds.Data["value"]))
	}
	tok, ok := tokenExists(t, id1)
	if !ok {
		t.Fatal("the rotated token does not exist")
	}
	if _, items := f.opened(after.Data["value"]); string(items["spec.join.token"]) != id1+"."+string(tok.Data["token-secret"]) {
		t.Fatal("the data does not carry the rotated token")
	}
	if _, ok := tokenExists(t, id0); !ok {
		t.Fatal("the old token was deleted: an instance booting from the old data would not join")
	}
	// Deleted: rotated at once.
	f.must(workload.CoreV1().Secrets(metav1.NamespaceSystem).Delete(f.ctx, "bootstrap-token-"+id1, metav1.DeleteOptions{}))
	f.reconcile("pool1")
	if id2 := f.dataSecret("pool1").Annotations[TokenIDAnnotation]; id2 == id1 || id2 == "" {
		t.Fatalf("a deleted pool token was not replaced (%s)", id2)
	}
}

// A pool's data is every instance's: a Windows pool's carries no Node
// name (one name for all instances was one Node, the pool's mapped name),
// an offline join blob (one computer account) is refused naming its field,
// and a pool without a version names the pool's field, not a Machine's.
func TestMachinePoolDataNamesNoMachine(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.secret("djoin", map[string][]byte{"blob": []byte(offlineBlob)})
	const name = "win-pool-workers"
	f.pool(name)
	c := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, c))
	c.Spec.OS, c.Spec.Host = bootstrapv1.OSWindows, bootstrapv1.HostSpec{}
	f.must(k8s.Update(f.ctx, c))
	wantCond(t, f.reconcile(name), DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	ds := f.dataSecret(name)
	if got, ok := ds.Annotations[NodeNameAnnotation]; ok {
		t.Fatalf("the pool's data names node %q for every instance", got)
	}
	if _, cfg := f.unsealFile(powerShellSpec(t, ds.Data["value"])); cfg.Spec.Node.Name != "" {
		t.Fatalf("every instance of the pool would be Node %q", cfg.Spec.Node.Name)
	}

	const blobPool = "win-pool-djoin"
	f.pool(blobPool)
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: blobPool}, c))
	c.Spec.OS = bootstrapv1.OSWindows
	c.Spec.Host = bootstrapv1.HostSpec{DomainJoin: &bootstrapv1.DomainJoin{Domain: "samdom.example.com",
		OfflineJoinBlobFrom: &bootstrapv1.SecretValueSource{Secret: bootstrapv1.SecretKeyReference{Name: "djoin", Key: "blob"}}}}
	f.must(k8s.Update(f.ctx, c))
	got := wantCond(t, f.reconcile(blobPool), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.HasPrefix(got.Message, "spec.host.domainJoin.offlineJoinBlobFrom: ") || strings.Contains(got.Message, offlineBlob) {
		t.Fatalf("message %q", got.Message)
	}
	if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: blobPool}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a data Secret was written for the blob pool: %v", err)
	}

	const noVersion = "pool-noversion"
	f.pool(noVersion)
	p := &clusterv1.MachinePool{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: noVersion}, p))
	p.Spec.Template.Spec.Version = ""
	f.must(k8s.Update(f.ctx, p))
	got = wantCond(t, f.reconcile(noVersion), DataSecretAvailableCondition, metav1.ConditionFalse, ReasonInvalidConfig)
	if !strings.Contains(got.Message, "spec.template.spec.version") {
		t.Fatalf("message %q does not name the pool's field", got.Message)
	}
}

// A pool's version changed (an upgrade): the data is rendered again for
// the new version at once, not at the next token rotation (two thirds of
// the TTL later, or hours with a long --bootstrap-token-ttl), during which
// new instances joined with the old version.
func TestMachinePoolUpgradeRendersAgain(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.pool("pool1")
	wantCond(t, f.reconcile("pool1"), ReadyCondition, metav1.ConditionTrue, ReasonAvailable)
	if _, items := f.opened(f.dataSecret("pool1").Data["value"]); len(items) == 0 {
		t.Fatal("no sealed items")
	}
	version := func() string {
		cfg, _ := f.unsealed(f.dataSecret("pool1").Data["value"])
		return cfg.Spec.Kubernetes.Version
	}
	if v := version(); v != "v1.37.2" {
		t.Fatalf("version %q", v)
	}
	p := &clusterv1.MachinePool{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "pool1"}, p))
	p.Spec.Template.Spec.Version = "v1.37.3"
	f.must(k8s.Update(f.ctx, p))
	got := wantCond(t, f.reconcile("pool1"), ReadyCondition, metav1.ConditionTrue, ReasonTokenRotated)
	if !strings.Contains(got.Message, "version changed from v1.37.2 to v1.37.3") {
		t.Fatalf("message %q", got.Message)
	}
	if v := version(); v != "v1.37.3" {
		t.Fatalf("after the pool's upgrade new instances still join with %q", v)
	}
	if a := f.dataSecret("pool1").Annotations[VersionAnnotation]; a != "v1.37.3" {
		t.Fatalf("version annotation %q", a)
	}
}
