//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	controlplanev1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
	cpcontroller "github.com/machineadm/machineadm/pkg/capi/controlplane/controller"
)

// Names of TestControlPlaneProvider's objects (namespace default, Cluster
// capiCluster).
const (
	cpName    = "e2e-cp"
	cpWorkers = "e2e-workers"
	// cpProbeInterval is how often the API server is probed through the
	// control-plane endpoint while the control plane changes.
	cpProbeInterval = 200 * time.Millisecond
	// cpMaxOutage bounds the longest run of failed probes during the
	// scale-down: the load balancer's health check (every second) takes
	// a leaving API server out once its /readyz fails, which its etcd
	// member's removal causes; a few probes may land on it before.
	cpMaxOutage = 5 * time.Second
)

// TestControlPlaneProvider is the control-plane provider's e2e (issue
// 28) on Cluster API's real core controllers, with the management cluster
// of TestClusterAPI (startCAPI) and the nspawn provider with its
// control-plane load balancer (capi_lb.go) as the endpoint:
//   - a Cluster with a MachineadmControlPlane of 3 replicas (stacked etcd)
//     and a MachineDeployment of 1 worker: 3 control-plane Machines
//     Running with Ready Nodes, the worker's Node Ready, the control
//     plane's contract status (initialized, 3 ready and up to date) and
//     3 healthy etcd members (asked directly, with a client certificate
//     the etcd CA of <cluster>-etcd signs, as the controller does);
//   - one control-plane machine (the newest) killed (SIGKILL, no
//     shutdown) with a MachineHealthCheck on the control-plane Machines
//     (Node Ready Unknown or False for 10 s): its Machine is replaced by
//     exactly one new Machine, status 3/3/3 again and 3 healthy etcd
//     members named after the current Nodes (the dead member removed);
//   - scaled to 1: 1 control-plane Machine, 1 healthy etcd member, while
//     the API server is asked for /readyz through the endpoint every
//     200 ms; failed probes are counted and logged, and a run of them
//     longer than cpMaxOutage fails the test;
//   - a machine-spec change (a file on the host) at 1 replica: the Machine
//     is replaced (scale up to 2, then down to 1), its replacement up to
//     date, etcd 1 healthy member, the API server probed throughout
//     (failures logged, not fatal: one Machine's replacement moves the
//     only etcd member's data to a new one).
//
// Lines "TIMING cp-…" are the figures: the Cluster's creation to 3 Ready
// control planes, each control-plane Machine's creation to its Node
// Ready, the kill to the remediated control plane, the scale-down, the
// rollout.
func TestControlPlaneProvider(t *testing.T) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	start := time.Now()
	ce := e.startCAPI(ctx, t, providerOptions{loadBalancer: true})
	c := ce.mc.c
	t.Cleanup(func() {
		if t.Failed() {
			dumpControlPlane(t, c)
		}
	})

	mcp := &controlplanev1.MachineadmControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: cpName, Namespace: capiNS},
		Spec: controlplanev1.MachineadmControlPlaneSpec{
			Replicas: ptrTo(int32(3)),
			Version:  kubernetesVersion,
			MachineTemplate: controlplanev1.MachineTemplate{Spec: controlplanev1.MachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infraGroup, Kind: "NspawnMachineTemplate", Name: cpName},
				// The drain of a leaving control-plane Node: bounded, the
				// e2e's pods have no disruption budget anyway.
				Deletion: controlplanev1.MachineDeletion{NodeDrainTimeoutSeconds: ptrTo(int32(60))},
			}},
			MachineadmConfigSpec: capiConfigSpec(t, ce.recipient, true),
		},
	}
	cl := capiClusterObject()
	cl.Spec.ControlPlaneRef = clusterv1.ContractVersionedObjectReference{APIGroup: controlplanev1.GroupVersion.Group, Kind: "MachineadmControlPlane", Name: cpName}
	emptyTemplate := map[string]any{"template": map[string]any{"spec": map[string]any{}}}
	created := time.Now()
	for _, o := range []client.Object{
		cl,
		infraObject("NspawnCluster", capiCluster, nil),
		infraObject("NspawnMachineTemplate", cpName, emptyTemplate),
		mcp,
		&bootstrapv1.MachineadmConfigTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: cpWorkers, Namespace: capiNS},
			Spec: bootstrapv1.MachineadmConfigTemplateSpec{Template: bootstrapv1.MachineadmConfigTemplateResource{
				Spec: capiConfigSpec(t, ce.recipient, false),
			}},
		},
		infraObject("NspawnMachineTemplate", cpWorkers, emptyTemplate),
		&clusterv1.MachineDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: cpWorkers, Namespace: capiNS},
			Spec: clusterv1.MachineDeploymentSpec{
				ClusterName: capiCluster,
				Replicas:    ptrTo(int32(1)),
				Selector:    metav1.LabelSelector{MatchLabels: map[string]string{"pool": cpWorkers}},
				Template: clusterv1.MachineTemplateSpec{
					ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{"pool": cpWorkers}},
					Spec: clusterv1.MachineSpec{
						ClusterName: capiCluster,
						Version:     kubernetesVersion,
						Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
							APIGroup: bootstrapv1.GroupVersion.Group, Kind: "MachineadmConfigTemplate", Name: cpWorkers}},
						InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: infraGroup, Kind: "NspawnMachineTemplate", Name: cpWorkers},
					},
				},
			},
		},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Logf("Cluster API objects created %s after the start", time.Since(start).Round(time.Second))

	// 1. Three control planes and the worker.
	w := &capiWatcher{c: c, tokens: map[string]string{}}
	up, err := w.waitMachines(ctx, 4, 20*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cpReady := created
	for _, m := range up {
		if strings.HasPrefix(m.name, cpName+"-") {
			timing(t, "cp-machine-to-node-ready-"+m.name, m.ready.Sub(m.created))
			if m.ready.After(cpReady) {
				cpReady = m.ready
			}
		}
	}
	timing(t, "cp-cluster-create-to-3-control-planes-ready", cpReady.Sub(created))
	timing(t, "cp-cluster-create-to-all-4-nodes-ready", time.Since(created))
	if err := waitControlPlaneStatus(ctx, c, 3, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := waitEtcdMembers(ctx, c, 3, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	w.checkConfigs(ctx, t, up)

	cs, err := w.workload(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// 2. A MachineHealthCheck remediates a killed control-plane machine.
	mhc := &clusterv1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: cpName, Namespace: capiNS},
		Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: capiCluster,
			Selector:    metav1.LabelSelector{MatchLabels: map[string]string{clusterv1.MachineControlPlaneLabel: ""}},
			Checks: clusterv1.MachineHealthCheckChecks{UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: ptrTo(int32(10))},
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: ptrTo(int32(10))},
			}},
		},
	}
	if err := c.Create(ctx, mhc); err != nil {
		t.Fatal(err)
	}
	before := controlPlaneMachineNames(ctx, t, c)
	victim := newestControlPlaneMachine(ctx, t, c)
	killed := time.Now()
	if err := ce.p.kill(victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed control-plane machine %s", victim)
	if err := waitReplaced(ctx, c, before, victim, 3, 12*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := waitEtcdMembers(ctx, c, 3, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	timing(t, "cp-kill-to-remediated-3-ready", time.Since(killed))
	if err := c.Delete(ctx, mhc); err != nil {
		t.Fatal(err)
	}

	// 3. Scale to 1 with the API server probed through the endpoint.
	probe := startEndpointProbe(ctx, cs)
	scaled := time.Now()
	setReplicas(ctx, t, c, 1)
	if err := waitControlPlaneStatus(ctx, c, 1, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := waitEtcdMembers(ctx, c, 1, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	timing(t, "cp-scale-3-to-1", time.Since(scaled))
	total, failures := probe.stop()
	t.Logf("scale 3 → 1: %d API probes through %s, %d failed%s", total, capiLBAddr, len(failures), probe.summary())
	if total == 0 {
		t.Error("no API probe ran during the scale-down")
	}
	if d := probe.longestOutage(); d > cpMaxOutage {
		t.Errorf("the API server did not answer for %s during the scale-down (%d of %d probes failed), want at most %s", d, len(failures), total, cpMaxOutage)
	}

	// 4. A machine-spec change rolls the one control-plane Machine.
	before = controlPlaneMachineNames(ctx, t, c)
	probe = startEndpointProbe(ctx, cs)
	rolled := time.Now()
	cur := &controlplanev1.MachineadmControlPlane{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: cpName}, cur); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.MachineadmConfigSpec.Host.Files = append(cur.Spec.MachineadmConfigSpec.Host.Files,
		bootstrapv1.File{Path: "/etc/machineadm-e2e/rollout", Content: "rolled\n"})
	if err := c.Patch(ctx, cur, patch); err != nil {
		t.Fatal(err)
	}
	if err := waitRolledOut(ctx, c, before, 1, 15*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := waitEtcdMembers(ctx, c, 1, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	timing(t, "cp-rollout-1-machine", time.Since(rolled))
	total, failures = probe.stop()
	t.Logf("rollout at 1 replica: %d API probes through %s, %d failed%s", total, capiLBAddr, len(failures), probe.summary())
	timing(t, "cp-total", time.Since(start))
}

// setReplicas patches the control plane's replicas.
func setReplicas(ctx context.Context, t *testing.T, c client.Client, n int32) {
	t.Helper()
	mcp := &controlplanev1.MachineadmControlPlane{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: cpName}, mcp); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(mcp.DeepCopy())
	mcp.Spec.Replicas = ptrTo(n)
	if err := c.Patch(ctx, mcp, patch); err != nil {
		t.Fatal(err)
	}
}

// controlPlaneMachines lists the Cluster's control-plane Machines.
func controlPlaneMachines(ctx context.Context, c client.Client) ([]clusterv1.Machine, error) {
	ms := &clusterv1.MachineList{}
	err := c.List(ctx, ms, client.InNamespace(capiNS), client.MatchingLabels{clusterv1.ClusterNameLabel: capiCluster}, client.HasLabels{clusterv1.MachineControlPlaneLabel})
	return ms.Items, err
}

func controlPlaneMachineNames(ctx context.Context, t *testing.T, c client.Client) map[string]bool {
	t.Helper()
	ms, err := controlPlaneMachines(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range ms {
		out[m.Name] = true
	}
	return out
}

// waitControlPlaneStatus waits until the control plane reports want
// replicas, all ready and up to date, initialized, and exactly want
// control-plane Machines exist (none left deleting).
func waitControlPlaneStatus(ctx context.Context, c client.Client, want int32, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		mcp := &controlplanev1.MachineadmControlPlane{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: cpName}, mcp); err != nil {
			last = err.Error()
			return false, nil
		}
		ms, err := controlPlaneMachines(ctx, c)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		st := mcp.Status
		v := func(p *int32) int32 {
			if p == nil {
				return -1
			}
			return *p
		}
		last = fmt.Sprintf("initialized=%v replicas=%d ready=%d upToDate=%d machines=%d generation=%d observed=%d",
			st.Initialization.ControlPlaneInitialized != nil && *st.Initialization.ControlPlaneInitialized,
			v(st.Replicas), v(st.ReadyReplicas), v(st.UpToDateReplicas), len(ms), mcp.Generation, st.ObservedGeneration)
		return st.Initialization.ControlPlaneInitialized != nil && *st.Initialization.ControlPlaneInitialized &&
			st.ObservedGeneration == mcp.Generation &&
			v(st.Replicas) == want && v(st.ReadyReplicas) == want && v(st.UpToDateReplicas) == want && len(ms) == int(want), nil
	})
	if err != nil {
		return fmt.Errorf("MachineadmControlPlane %s: %d replicas ready and up to date not reached within %s (last: %s): %w", cpName, want, timeout, last, err)
	}
	return nil
}

// newestControlPlaneMachine is the name of the newest control-plane
// Machine (not the one that initialised the cluster).
func newestControlPlaneMachine(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	ms, err := controlPlaneMachines(ctx, c)
	if err != nil || len(ms) == 0 {
		t.Fatalf("control-plane Machines: %v (%d)", err, len(ms))
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].CreationTimestamp.Before(&ms[j].CreationTimestamp) })
	return ms[len(ms)-1].Name
}

// waitReplaced waits until the Machine victim is gone, one control-plane
// Machine not in before replaced it, and the control plane reports want
// ready, up-to-date replicas.
func waitReplaced(ctx context.Context, c client.Client, before map[string]bool, victim string, want int32, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		ms, err := controlPlaneMachines(ctx, c)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var names []string
		gone, added := true, 0
		for _, m := range ms {
			names = append(names, m.Name)
			if m.Name == victim {
				gone = false
			} else if !before[m.Name] {
				added++
			}
		}
		last = fmt.Sprintf("Machines %v", names)
		return gone && added == 1, nil
	})
	if err != nil {
		return fmt.Errorf("%s not replaced within %s (last: %s): %w", victim, timeout, last, err)
	}
	return waitControlPlaneStatus(ctx, c, want, timeout)
}

// waitRolledOut waits until none of the Machines in before is left and
// want up-to-date control-plane Machines run.
func waitRolledOut(ctx context.Context, c client.Client, before map[string]bool, want int32, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		ms, err := controlPlaneMachines(ctx, c)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var names []string
		for _, m := range ms {
			if before[m.Name] {
				last = fmt.Sprintf("%s still there (%d Machines)", m.Name, len(ms))
				return false, nil
			}
			names = append(names, m.Name)
		}
		last = fmt.Sprintf("Machines %v", names)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("rollout not done within %s (last: %s): %w", timeout, last, err)
	}
	return waitControlPlaneStatus(ctx, c, want, timeout)
}

// waitEtcdMembers waits until the Cluster's etcd has exactly want
// members, each healthy and each named after a control-plane Machine's
// Node; it asks etcd as the controller does (DirectEtcdDialer: the
// Machines' internal addresses, a client certificate from the etcd CA).
func waitEtcdMembers(ctx context.Context, c client.Client, want int, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 3*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		cl := &clusterv1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: capiCluster}, cl); err != nil {
			last = err.Error()
			return false, nil
		}
		ms, err := controlPlaneMachines(ctx, c)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var eps []string
		nodes := map[string]bool{}
		for _, m := range ms {
			nodes[m.Status.NodeRef.Name] = true
			for _, a := range m.Status.Addresses {
				if a.Type == clusterv1.MachineInternalIP {
					eps = append(eps, a.Address)
					break
				}
			}
		}
		ec, err := cpcontroller.DirectEtcdDialer(ctx, c, cl, eps)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		defer ec.Close()
		members, err := ec.Members(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var desc []string
		ok := len(members) == want
		for _, m := range members {
			desc = append(desc, fmt.Sprintf("%s healthy=%v", m.Name, m.Healthy))
			if !m.Healthy || !nodes[m.Name] {
				ok = false
			}
		}
		sort.Strings(desc)
		last = fmt.Sprintf("%d members: %s (control-plane Nodes %v)", len(members), strings.Join(desc, ", "), nodes)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("etcd: %d healthy members of the control-plane Nodes not reached within %s (last: %s): %w", want, timeout, last, err)
	}
	return nil
}

// endpointProbe asks the workload API server's /readyz through the
// control-plane endpoint every cpProbeInterval.
type endpointProbe struct {
	cancel   context.CancelFunc
	done     chan struct{}
	total    atomic.Int64
	mu       sync.Mutex
	failures []string
	// firstFailed is when the current run of failed probes began (zero
	// after a success); longest is the longest such run.
	firstFailed time.Time
	longest     time.Duration
}

func startEndpointProbe(ctx context.Context, cs *kubernetes.Clientset) *endpointProbe {
	ctx, cancel := context.WithCancel(ctx)
	p := &endpointProbe{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(cpProbeInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
			rcancel()
			if ctx.Err() != nil {
				return
			}
			p.total.Add(1)
			now := time.Now()
			p.mu.Lock()
			if err != nil {
				p.failures = append(p.failures, now.Format("15:04:05.0")+" "+err.Error())
				if p.firstFailed.IsZero() {
					p.firstFailed = now
				}
				p.longest = max(p.longest, now.Sub(p.firstFailed)+cpProbeInterval)
			} else {
				p.firstFailed = time.Time{}
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// stop ends the probe and returns the probes made and the failures.
func (p *endpointProbe) stop() (int64, []string) {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total.Load(), p.failures
}

// summary is the longest outage and the first failures, for the log.
func (p *endpointProbe) summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failures) == 0 {
		return ""
	}
	n := min(len(p.failures), 5)
	return fmt.Sprintf(" (longest run of failures %s): %s", p.longest, strings.Join(p.failures[:n], "; "))
}

// longestOutage is the longest run of failed probes.
func (p *endpointProbe) longestOutage() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.longest
}

// dumpControlPlane logs the control plane's status after a failure.
func dumpControlPlane(t *testing.T, c client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mcp := &controlplanev1.MachineadmControlPlane{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: cpName}, mcp); err != nil {
		t.Logf("MachineadmControlPlane %s: %v", cpName, err)
		return
	}
	b, _ := json.Marshal(mcp.Status)
	t.Logf("MachineadmControlPlane %s status: %s", cpName, b)
}
