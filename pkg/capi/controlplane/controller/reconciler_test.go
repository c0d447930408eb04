//go:build !windows

package controller

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// TestEnvtestCreatesOneAtATime: the first Machine (with its config and
// infrastructure machine) is created with the Cluster's Secrets; the next
// ones only after the control plane is initialised and the previous one
// is Ready; status follows the contract.
func TestEnvtestCreatesOneAtATime(t *testing.T) {
	f := newFixture(t, 3, nil)
	mcp := f.reconcile()
	ms := f.live()
	if len(ms) != 1 {
		t.Fatalf("%d Machines after the first pass, want 1", len(ms))
	}
	first := ms[0]
	f.checkMachine(&first)

	// Certificates and kubeconfig, controlled by the control plane.
	for _, s := range []string{"ca", "etcd", "proxy", "sa", "kubeconfig"} {
		sec := &corev1.Secret{}
		f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-" + s}, sec))
		if c := metav1.GetControllerOf(sec); c == nil || c.UID != mcp.UID || sec.Type != ClusterSecretType || sec.Labels[clusterv1.ClusterNameLabel] != "c1" {
			t.Fatalf("Secret c1-%s: controller %v, type %s, labels %v", s, c, sec.Type, sec.Labels)
		}
	}
	f.checkKubeconfig()

	// Not initialised: no second Machine however often it runs.
	f.reconcile()
	if n := len(f.live()); n != 1 {
		t.Fatalf("%d Machines before init, want 1", n)
	}
	if c := cond(f.reconcile(), ScalingUpCondition); c.Status != metav1.ConditionTrue || c.Reason != ReasonWaitingForInitialization {
		t.Fatalf("ScalingUp = %+v, want True waiting for initialisation", c)
	}
	f.ready(first.Name)
	mcp = f.reconcile()
	if !ptrTrue(mcp.Status.Initialization.ControlPlaneInitialized) {
		t.Fatal("not initialised after the first Machine's Node appeared")
	}
	ms = f.live()
	if len(ms) != 2 {
		t.Fatalf("%d Machines after init, want 2", len(ms))
	}
	// The second waits for Ready before a third comes.
	mcp = f.reconcile()
	if n := len(f.live()); n != 2 {
		t.Fatalf("%d Machines while the second is not Ready, want 2", n)
	}
	second := f.pending()
	if c := cond(mcp, ScalingUpCondition); c.Reason != ReasonWaitingForMachineReady || !strings.Contains(c.Message, second) {
		t.Fatalf("ScalingUp = %+v, want it waiting for %s", c, second)
	}
	f.ready(second)
	f.reconcile()
	ms = f.live()
	if len(ms) != 3 {
		t.Fatalf("%d Machines, want 3", len(ms))
	}
	f.ready(f.pending())
	mcp = f.reconcile()
	if n := len(f.live()); n != 3 {
		t.Fatalf("%d Machines at the end, want 3", n)
	}
	// Spread over the two control-plane failure domains, never "w".
	fds := map[string]int{}
	for _, m := range ms {
		fds[m.Spec.FailureDomain]++
	}
	if fds["z1"] != 2 || fds["z2"] != 1 {
		t.Fatalf("failure domains %v, want z1:2 z2:1", fds)
	}
	st := mcp.Status
	if *st.Replicas != 3 || *st.ReadyReplicas != 3 || *st.AvailableReplicas != 3 || *st.UpToDateReplicas != 3 || st.Version != "v1.36.4" {
		t.Fatalf("status %+v", st)
	}
	if want := "cluster.x-k8s.io/cluster-name=c1,cluster.x-k8s.io/control-plane=,cluster.x-k8s.io/control-plane-name=cp"; st.Selector != want {
		t.Fatalf("selector %q, want %q", st.Selector, want)
	}
	for _, c := range []string{AvailableCondition, MachinesReadyCondition, MachinesUpToDateCondition, EtcdClusterHealthyCondition, CertificatesAvailableCondition} {
		if cond(mcp, c).Status != metav1.ConditionTrue {
			t.Errorf("%s = %+v, want True", c, cond(mcp, c))
		}
	}
	if cond(mcp, ScalingUpCondition).Status != metav1.ConditionFalse {
		t.Errorf("ScalingUp = %+v at 3 of 3", cond(mcp, ScalingUpCondition))
	}
}

// checkMachine: labels, annotations, references and owners of a new
// Machine, its MachineadmConfig and its infrastructure machine.
func (f *fixture) checkMachine(m *clusterv1.Machine) {
	f.t.Helper()
	t := f.t
	if m.Spec.Version != "v1.36.4" || m.Spec.ClusterName != "c1" || m.Labels[clusterv1.MachineControlPlaneLabel] != "" || m.Labels[clusterv1.MachineControlPlaneNameLabel] != "cp" || m.Labels["team"] != "infra" {
		t.Fatalf("Machine %s: %+v %v", m.Name, m.Spec, m.Labels)
	}
	if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; !ok {
		t.Fatal("no control-plane label")
	}
	if _, ok := m.Annotations[PreTerminateHookAnnotation]; !ok {
		t.Fatal("no pre-terminate hook")
	}
	if m.Spec.Deletion.NodeDrainTimeoutSeconds == nil || *m.Spec.Deletion.NodeDrainTimeoutSeconds != 120 {
		t.Fatalf("deletion %+v", m.Spec.Deletion)
	}
	cfg := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg))
	if cfg.Spec.Agent.URL != "https://example.invalid/machineadm" || cfg.Labels[clusterv1.MachineControlPlaneLabel] != "" {
		t.Fatalf("config %+v", cfg)
	}
	infra := &unstructured.Unstructured{}
	infra.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1alpha1")
	infra.SetKind(m.Spec.InfrastructureRef.Kind)
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: m.Spec.InfrastructureRef.Name}, infra))
	size, _, _ := unstructured.NestedString(infra.Object, "spec", "size")
	if infra.GetKind() != "FakeMachine" || size != "large" || infra.GetAnnotations()[clusterv1.TemplateClonedFromNameAnnotation] != "tpl1" {
		t.Fatalf("infrastructure machine %v", infra.Object)
	}
	for _, o := range []metav1.Object{m, cfg, infra} {
		if c := metav1.GetControllerOfNoCopy(o); c == nil || c.Kind != "MachineadmControlPlane" || c.Name != "cp" {
			t.Fatalf("%s: controller %v", o.GetName(), c)
		}
	}
}

// checkKubeconfig: the kubeconfig points at the Cluster's endpoint and
// authenticates with a client certificate the cluster CA signed.
func (f *fixture) checkKubeconfig() {
	f.t.Helper()
	sec := &corev1.Secret{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-kubeconfig"}, sec))
	cfg, err := clientcmd.Load(sec.Data["value"])
	f.must(err)
	ca := &corev1.Secret{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "c1-ca"}, ca))
	roots, err := certutil.ParseCertsPEM(ca.Data["tls.crt"])
	f.must(err)
	pool := x509.NewCertPool()
	pool.AddCert(roots[0])
	for _, c := range cfg.Clusters {
		if c.Server != "https://10.0.0.10:6443" {
			f.t.Fatalf("server %s", c.Server)
		}
	}
	for _, a := range cfg.AuthInfos {
		certs, err := certutil.ParseCertsPEM(a.ClientCertificateData)
		f.must(err)
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			f.t.Fatalf("kubeconfig client certificate: %v", err)
		}
		if certs[0].Subject.Organization[0] != "system:masters" || certs[0].NotAfter.Sub(f.now) < 300*24*time.Hour {
			f.t.Fatalf("client certificate %v until %v", certs[0].Subject, certs[0].NotAfter)
		}
		return
	}
	f.t.Fatal("kubeconfig without a user")
}

// grow brings the fixture to n Ready Machines.
func (f *fixture) grow(n int) []clusterv1.Machine {
	f.t.Helper()
	for range 3 * n {
		for _, m := range f.live() {
			if m.Status.NodeRef.Name == "" {
				f.ready(m.Name)
			}
		}
		f.reconcile()
		ms := f.live()
		done := len(ms) == n
		for _, m := range ms {
			done = done && m.Status.NodeRef.Name != ""
		}
		if done {
			return ms
		}
	}
	f.t.Fatalf("did not reach %d Ready Machines: %d", n, len(f.live()))
	return nil
}

// TestEnvtestScaleDownRemovesEtcdMemberInHook: scaling 3 → 1 deletes one
// Machine at a time; its etcd member is removed only once Cluster API
// waits on the pre-terminate hook, then the hook goes; the next deletion
// waits for the first to be gone.
func TestEnvtestScaleDownRemovesEtcdMemberInHook(t *testing.T) {
	f := newFixture(t, 3, nil)
	ms := f.grow(3)
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) { c.Spec.Replicas = ptr(int32(1)) })
	mcp := f.reconcile()
	if c := cond(mcp, ScalingDownCondition); c.Status != metav1.ConditionTrue {
		t.Fatalf("ScalingDown = %+v", c)
	}
	all := f.machines()
	var deleted []string
	for _, m := range all {
		if !m.DeletionTimestamp.IsZero() {
			deleted = append(deleted, m.Name)
		}
	}
	// z1 holds two Machines: its oldest (by creation, then name) goes.
	want := ""
	for _, m := range ms {
		if m.Spec.FailureDomain == "z1" && want == "" {
			want = m.Name
		}
	}
	if len(deleted) != 1 || deleted[0] != want {
		t.Fatalf("deleted %v, want [%s] (oldest in the fullest failure domain)", deleted, want)
	}
	// Before Cluster API waits on the hook (drain): no member removed,
	// nothing else deleted.
	f.reconcile()
	if len(f.etcd.calls) != 0 {
		t.Fatalf("etcd members removed before the hook: %v", f.etcd.calls)
	}
	if n := len(f.live()); n != 2 {
		t.Fatalf("%d live Machines while one is deleted, want 2", n)
	}
	f.waitingForHook(deleted[0])
	f.reconcile()
	if len(f.etcd.calls) != 1 || f.etcd.calls[0] != "node-"+deleted[0] {
		t.Fatalf("etcd removals %v, want node-%s", f.etcd.calls, deleted[0])
	}
	f.release(deleted[0])
	f.reconcile()
	left := f.live()
	if len(left) != 1 {
		t.Fatalf("%d live Machines, want 1 after the second scale-down step", len(left))
	}
	for _, m := range f.machines() {
		if !m.DeletionTimestamp.IsZero() {
			f.waitingForHook(m.Name)
		}
	}
	f.reconcile()
	if len(f.etcd.calls) != 2 {
		t.Fatalf("etcd removals %v, want 2", f.etcd.calls)
	}
	mcp = f.reconcile()
	if *mcp.Status.Replicas != 2 && *mcp.Status.Replicas != 1 {
		t.Fatalf("replicas %d", *mcp.Status.Replicas)
	}
}

// TestEnvtestScaleDownKeepsQuorum: with one of three etcd members
// unhealthy no Machine is removed and the condition says why.
func TestEnvtestScaleDownKeepsQuorum(t *testing.T) {
	f := newFixture(t, 3, nil)
	ms := f.grow(3)
	f.etcd.sick["node-"+ms[2].Name] = true
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) { c.Spec.Replicas = ptr(int32(1)) })
	mcp := f.reconcile()
	for _, m := range f.machines() {
		if !m.DeletionTimestamp.IsZero() {
			t.Fatalf("Machine %s deleted with an unhealthy etcd member", m.Name)
		}
	}
	if c := cond(mcp, ScalingDownCondition); c.Reason != ReasonEtcdUnhealthy || !strings.Contains(c.Message, "node-"+ms[2].Name) {
		t.Fatalf("ScalingDown = %+v, want it to name the unhealthy member", c)
	}
	if c := cond(mcp, EtcdClusterHealthyCondition); c.Status != metav1.ConditionFalse {
		t.Fatalf("EtcdClusterHealthy = %+v", c)
	}
}

// TestEnvtestRolloutOnVersionChange: a version change with maxSurge 1
// first adds an up-to-date Machine, then removes the old one; the old
// Machine's UpToDate condition says why.
func TestEnvtestRolloutOnVersionChange(t *testing.T) {
	f := newFixture(t, 1, nil)
	old := f.grow(1)[0]
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) { c.Spec.Version = "v1.37.2" })
	mcp := f.reconcile()
	ms := f.live()
	repl := f.pending()
	if len(ms) != 2 || repl == "" {
		t.Fatalf("Machines %d after the version change, want the old and a new one", len(ms))
	}
	nm := &clusterv1.Machine{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: repl}, nm))
	if nm.Spec.Version != "v1.37.2" {
		t.Fatalf("replacement at %s", nm.Spec.Version)
	}
	if c := cond(mcp, RollingOutCondition); c.Status != metav1.ConditionTrue {
		t.Fatalf("RollingOut = %+v", c)
	}
	mcp = f.reconcile()
	if v := mcp.Status.Versions; len(v) != 2 || v[0].Version != "v1.36.4" || v[0].Replicas != 1 || v[1].Version != "v1.37.2" || v[1].Replicas != 1 || mcp.Status.Version != "v1.36.4" {
		t.Fatalf("versions %+v, version %s", v, mcp.Status.Version)
	}
	m := &clusterv1.Machine{}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(&old), m))
	if c := findCond(m.Status.Conditions, clusterv1.MachineUpToDateCondition); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "v1.37.2") {
		t.Fatalf("old Machine UpToDate = %+v", c)
	}
	// The old one stays until the new one is Ready.
	f.reconcile()
	if n := len(f.live()); n != 2 {
		t.Fatalf("%d Machines before the new one is Ready", n)
	}
	f.ready(repl)
	f.reconcile()
	for _, x := range f.machines() {
		if x.Name == old.Name && x.DeletionTimestamp.IsZero() {
			t.Fatal("the old Machine was not removed once its replacement was Ready")
		}
		if x.Name == repl && !x.DeletionTimestamp.IsZero() {
			t.Fatal("the new Machine was removed")
		}
	}
	// A change of the machine spec rolls too; metadata does not.
	f.waitingForHook(old.Name)
	f.reconcile()
	f.release(old.Name)
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) {
		c.Spec.MachineTemplate.ObjectMeta.Labels["team"] = "platform"
		c.Spec.MachineTemplate.Spec.Deletion.NodeDrainTimeoutSeconds = ptr(int32(30))
	})
	mcp = f.reconcile()
	if n := len(f.live()); n != 1 || cond(mcp, RollingOutCondition).Status != metav1.ConditionFalse {
		t.Fatalf("a metadata change rolled out: %d Machines, %+v", n, cond(mcp, RollingOutCondition))
	}
	cur := f.live()[0]
	if cur.Labels["team"] != "platform" || *cur.Spec.Deletion.NodeDrainTimeoutSeconds != 30 {
		t.Fatalf("metadata and deletion not propagated in place: %v %+v", cur.Labels, cur.Spec.Deletion)
	}
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) {
		c.Spec.MachineadmConfigSpec.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "Systemd"}
	})
	f.reconcile()
	ms = f.live()
	if len(ms) != 2 {
		t.Fatalf("runtime change: %d Machines, want a replacement", len(ms))
	}
	newest := f.pending()
	cfg := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: newest}, cfg))
	if cp := cfg.Spec.ControlPlane; cp == nil || cp.Runtime != "Systemd" {
		t.Fatalf("replacement config's controlPlane %+v, want runtime Systemd", cp)
	}
}

// pending is the one live Machine without a Node ("" if none).
func (f *fixture) pending() string {
	f.t.Helper()
	name := ""
	for _, m := range f.live() {
		if m.Status.NodeRef.Name == "" {
			if name != "" {
				f.t.Fatalf("two Machines without a Node: %s and %s", name, m.Name)
			}
			name = m.Name
		}
	}
	return name
}

func findCond(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// TestEnvtestRemediation: a Machine a MachineHealthCheck marks is
// deleted (its member removed in the hook) and replaced; a second one
// while the first's replacement fails too soon counts a retry; with
// maxRetry reached remediation waits and says so.
func TestEnvtestRemediation(t *testing.T) {
	f := newFixture(t, 3, func(c *cpv1.MachineadmControlPlane) {
		c.Spec.Remediation = cpv1.Remediation{MaxRetry: ptr(int32(0))}
	})
	ms := f.grow(3)
	bad := ms[1].Name
	f.etcd.sick["node-"+bad] = true
	f.markUnhealthy(bad)
	mcp := f.reconcile()
	if c := cond(mcp, RemediatingCondition); c.Status != metav1.ConditionTrue || c.Reason != ReasonRemediating {
		t.Fatalf("Remediating = %+v", c)
	}
	if l := mcp.Status.LastRemediation; l == nil || l.Machine != bad || l.RetryCount != 0 {
		t.Fatalf("lastRemediation %+v", l)
	}
	f.waitingForHook(bad)
	f.reconcile()
	if len(f.etcd.calls) != 1 || f.etcd.calls[0] != "node-"+bad {
		t.Fatalf("etcd removals %v", f.etcd.calls)
	}
	f.release(bad)
	f.reconcile()
	ms = f.live()
	if len(ms) != 3 {
		t.Fatalf("%d Machines after remediation, want a replacement", len(ms))
	}
	// The replacement fails too, within the healthy period: maxRetry 0
	// allows no second remediation in a row.
	repl := f.pending()
	f.ready(repl)
	f.markUnhealthy(repl)
	f.now = f.now.Add(time.Minute)
	mcp = f.reconcile()
	if c := cond(mcp, RemediatingCondition); c.Reason != ReasonRemediationRetries || !strings.Contains(c.Message, repl) {
		t.Fatalf("Remediating = %+v, want retries exhausted for %s", c, repl)
	}
	for _, m := range f.machines() {
		if !m.DeletionTimestamp.IsZero() {
			t.Fatalf("Machine %s deleted beyond maxRetry", m.Name)
		}
	}
}

// TestEnvtestRemediationKeepsQuorum: of three, two unhealthy: the one
// marked is not remediated (removing it would leave one healthy member of
// two) and the condition says why.
func TestEnvtestRemediationKeepsQuorum(t *testing.T) {
	f := newFixture(t, 3, nil)
	ms := f.grow(3)
	f.etcd.sick["node-"+ms[0].Name] = true
	f.etcd.sick["node-"+ms[1].Name] = true
	f.markUnhealthy(ms[1].Name)
	mcp := f.reconcile()
	if c := cond(mcp, RemediatingCondition); c.Status != metav1.ConditionTrue || c.Reason != ReasonWaitingForQuorum {
		t.Fatalf("Remediating = %+v, want it waiting for quorum", c)
	}
	m := &clusterv1.Machine{}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(&ms[1]), m))
	if c := findCond(m.Status.Conditions, clusterv1.MachineOwnerRemediatedCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonWaitingForQuorum || !strings.Contains(c.Message, "quorum") {
		t.Fatalf("Machine OwnerRemediated = %+v, want the wait's reason", c)
	}
	for _, m := range f.machines() {
		if !m.DeletionTimestamp.IsZero() {
			t.Fatalf("Machine %s deleted though etcd would lose quorum", m.Name)
		}
	}
}

func (f *fixture) markUnhealthy(name string) {
	f.setMachineCondition(name, clusterv1.MachineHealthCheckSucceededCondition, metav1.ConditionFalse, clusterv1.MachineHealthCheckUnhealthyNodeReason)
	f.setMachineCondition(name, clusterv1.MachineOwnerRemediatedCondition, metav1.ConditionFalse, clusterv1.MachineOwnerRemediatedWaitingForRemediationReason)
}

// TestEnvtestOutcomesAggregated: a Machine's failed bootstrap (its
// MachineadmConfig's BootstrapSucceeded False and outcome) shows on the
// control plane with phase, class and hint.
func TestEnvtestOutcomesAggregated(t *testing.T) {
	f := newFixture(t, 1, nil)
	f.reconcile()
	m := f.live()[0]
	cfg := &bootstrapv1.MachineadmConfig{}
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: m.Name}, cfg))
	cfg.Status.Conditions = []metav1.Condition{{Type: "BootstrapSucceeded", Status: metav1.ConditionFalse, Reason: "PreflightFailed", Message: "x", LastTransitionTime: metav1.Now()}}
	cfg.Status.Outcome = &bootstrapv1.BootstrapOutcome{Result: "Failed", FailedPhase: "preflight", ErrorClass: "PreflightFailed", Hint: "swap is on"}
	f.must(k8s.Status().Update(f.ctx, cfg))
	c := cond(f.reconcile(), MachinesBootstrappedCondition)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonBootstrapFailed {
		t.Fatalf("MachinesBootstrapped = %+v", c)
	}
	for _, w := range []string{m.Name, "preflight", "PreflightFailed", "swap is on"} {
		if !strings.Contains(c.Message, w) {
			t.Fatalf("message %q lacks %q", c.Message, w)
		}
	}
}

// TestEnvtestAdmission: the CRD refuses bad specs naming the field.
func TestEnvtestAdmission(t *testing.T) {
	requireEnv(t)
	f := newFixture(t, 1, nil)
	cases := []struct {
		name, field string
		mut         func(*cpv1.MachineadmControlPlane)
	}{
		{"even replicas with a stacked etcd", "spec.replicas", func(c *cpv1.MachineadmControlPlane) { c.Spec.Replicas = ptr(int32(2)) }},
		{"maxSurge 0 with one replica", "spec.rollout.strategy.rollingUpdate.maxSurge", func(c *cpv1.MachineadmControlPlane) {
			c.Spec.Rollout.Strategy.RollingUpdate.MaxSurge = ptr(int32(0))
		}},
		{"maxSurge 2", "spec.rollout.strategy.rollingUpdate.maxSurge", func(c *cpv1.MachineadmControlPlane) {
			c.Spec.Replicas = ptr(int32(3))
			c.Spec.Rollout.Strategy.RollingUpdate.MaxSurge = ptr(int32(2))
		}},
		{"version without v", "spec.version", func(c *cpv1.MachineadmControlPlane) { c.Spec.Version = "1.37.2" }},
		{"unknown runtime", "spec.machineadmConfigSpec.controlPlane.runtime", func(c *cpv1.MachineadmControlPlane) {
			c.Spec.MachineadmConfigSpec.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: "Docker"}
		}},
		{"certificatesExpiryDays below 7", "spec.rollout.before.certificatesExpiryDays", func(c *cpv1.MachineadmControlPlane) {
			c.Spec.Rollout.Before.CertificatesExpiryDays = 3
		}},
		{"profile without encryption", "spec.machineadmConfigSpec.controlPlane.apiServer.encryption", func(c *cpv1.MachineadmControlPlane) {
			c.Spec.MachineadmConfigSpec.Security = &bootstrapv1.Security{Profile: "cis-1.12"}
		}},
		{"unknown profile", "spec.machineadmConfigSpec.security.profile", func(c *cpv1.MachineadmControlPlane) {
			c.Spec.MachineadmConfigSpec.Security = &bootstrapv1.Security{Profile: "pci"}
		}},
	}
	for i, c := range cases {
		mcp := f.mcp.DeepCopy()
		mcp.ResourceVersion, mcp.UID = "", ""
		mcp.Name = "bad" + string(rune('a'+i))
		c.mut(mcp)
		err := k8s.Create(f.ctx, mcp)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: err = %v, want one naming %s", c.name, err, c.field)
		}
	}
	// A template for ClusterClasses is accepted.
	tpl := &cpv1.MachineadmControlPlaneTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "tpl", Namespace: f.ns},
		Spec: cpv1.MachineadmControlPlaneTemplateSpec{Template: cpv1.MachineadmControlPlaneTemplateResource{Spec: cpv1.MachineadmControlPlaneTemplateResourceSpec{
			MachineadmConfigSpec: f.mcp.Spec.MachineadmConfigSpec,
		}}},
	}
	f.must(k8s.Create(f.ctx, tpl))
	// Switching between stacked and external etcd is refused.
	cur := &cpv1.MachineadmControlPlane{}
	f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(f.mcp), cur))
	cur.Spec.MachineadmConfigSpec.ControlPlane = &bootstrapv1.ControlPlaneSpec{Etcd: &bootstrapv1.Etcd{External: &bootstrapv1.ExternalEtcd{Endpoints: []string{"https://192.0.2.9:2379"}}}}
	if err := k8s.Update(f.ctx, cur); err == nil || !strings.Contains(err.Error(), "spec.machineadmConfigSpec.controlPlane.etcd") {
		t.Errorf("switch to external etcd: err = %v", err)
	}
}

// TestEnvtestVersionSkipRefused: a version two minors ahead of the
// Machines creates nothing and says why.
func TestEnvtestVersionSkipRefused(t *testing.T) {
	f := newFixture(t, 1, nil)
	f.grow(1)
	f.updateSpec(func(c *cpv1.MachineadmControlPlane) { c.Spec.Version = "v1.38.0" })
	mcp := f.reconcile()
	if n := len(f.machines()); n != 1 {
		t.Fatalf("%d Machines after a version skip, want 1", n)
	}
	if c := cond(mcp, RollingOutCondition); c.Reason != ReasonVersionSkew || !strings.Contains(c.Message, "v1.36.4") {
		t.Fatalf("RollingOut = %+v", c)
	}
}

// TestEnvtestFirstMachineRemediatedBeforeInit: a first Machine that a
// MachineHealthCheck marks before any Node exists is replaced by a new
// first Machine.
func TestEnvtestFirstMachineRemediatedBeforeInit(t *testing.T) {
	f := newFixture(t, 3, nil)
	f.reconcile()
	first := f.live()[0].Name
	f.markUnhealthy(first)
	mcp := f.reconcile()
	if l := mcp.Status.LastRemediation; l == nil || l.Machine != first {
		t.Fatalf("lastRemediation %+v, want %s", l, first)
	}
	f.waitingForHook(first)
	f.reconcile()
	f.release(first)
	f.reconcile()
	ms := f.live()
	if len(ms) != 1 || ms[0].Name == first {
		t.Fatalf("Machines %d after remediating the first, want one new first Machine", len(ms))
	}
	if ptrTrue(f.reconcile().Status.Initialization.ControlPlaneInitialized) {
		t.Fatal("initialised without a Node")
	}
}

// TestEnvtestInfraTemplateOwnedByCluster: the infrastructure machine
// template the control plane clones gets the Cluster as an owner (not a
// controller) with its first Machine, once only, keeping the owners it
// had, so that it is garbage-collected with the Cluster. Before, the
// e2e's re-created Cluster found its deleted predecessor's template
// still there ("unchanged").
func TestEnvtestInfraTemplateOwnedByCluster(t *testing.T) {
	f := newFixture(t, 1, nil)
	tpl := &unstructured.Unstructured{}
	tpl.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1alpha1")
	tpl.SetKind("FakeMachineTemplate")
	f.must(k8s.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "tpl1"}, tpl))
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keeper", UID: "0000-keeper"}
	p := client.MergeFrom(tpl.DeepCopy())
	tpl.SetOwnerReferences([]metav1.OwnerReference{other})
	f.must(k8s.Patch(f.ctx, tpl, p))

	f.reconcile()
	if n := len(f.live()); n != 1 {
		t.Fatalf("%d Machines, want 1", n)
	}
	check := func() {
		t.Helper()
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(tpl.GroupVersionKind())
		f.must(k8s.Get(f.ctx, client.ObjectKeyFromObject(tpl), got))
		refs := got.GetOwnerReferences()
		cluster, kept := 0, false
		for _, o := range refs {
			switch {
			case o.UID == f.cluster.UID:
				cluster++
				if o.Kind != "Cluster" || o.Name != "c1" || o.APIVersion != clusterv1.GroupVersion.String() || (o.Controller != nil && *o.Controller) {
					t.Errorf("owner reference to the Cluster: %+v", o)
				}
			case o.UID == other.UID:
				kept = true
			}
		}
		if cluster != 1 || !kept {
			t.Fatalf("template owners %+v: want the Cluster once and the earlier owner kept", refs)
		}
	}
	check()
	// Again (a later Machine from the same template): no second reference.
	f.must(f.r.ensureClusterOwner(f.ctx, tpl, f.cluster))
	f.must(f.r.ensureClusterOwner(f.ctx, tpl, f.cluster))
	check()
}
