//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	controlplanev1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
	cpcontroller "github.com/machineadm/machineadm/pkg/capi/controlplane/controller"
)

// Names of TestControlPlaneProvider's objects (namespace default, Cluster
// capiCluster), as the committed cluster template names them.
const (
	cpName    = capiCluster + "-control-plane"
	cpWorkers = capiCluster + "-md-0"
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
// control-plane load balancer (capi_lb.go) as the endpoint. The nspawn
// provider boots each Machine from the image of its spec.version (the
// previous minor's kubelet and images for v1.36.3), as a cloud's images
// are built per version.
//   - the Cluster comes from the committed template: `clusterctl generate
//     cluster` (the real clusterctl, 3 control planes, 1 worker, version
//     v1.36.3) piped through the e2e's overlay (the nspawn machines' node
//     settings: image repository, kubelet and containerd options, which
//     the generic template cannot know) into `kubectl apply -f -`: 3
//     control-plane Machines Running with Ready Nodes, the worker's Node
//     Ready, contract status 3/3/3 and 3 healthy etcd members (asked
//     directly, with a client certificate of <cluster>-etcd's CA);
//   - spec.version v1.36.3 → v1.37.2 rolls all three control-plane
//     Machines one at a time while a Service (two pods on two Nodes) is
//     probed every 200 ms from the worker's host through kube-proxy's
//     rules (failed probes counted, the target is 0); then the
//     controller moves the kube-proxy DaemonSet to image tag v1.37.2 and
//     it rolls out on every Node (the worker preloads that image too),
//     with the probe still running and KubeProxyUpToDate True; afterwards
//     every control-plane Node's kubelet and kube-apiserver are v1.37.2,
//     the API server says v1.37.2 through the endpoint, etcd has 3
//     members;
//   - one control-plane machine (the newest) killed (SIGKILL) with a
//     MachineHealthCheck on the control-plane Machines (Node Ready Unknown
//     or False for 10 s): replaced by exactly one new Machine, status 3/3/3
//     and 3 healthy etcd members named after the current Nodes;
//   - scaled to 1: 1 control-plane Machine, 1 healthy etcd member, while
//     the API server's /readyz is probed through the endpoint every 200 ms
//     (a run of failures longer than cpMaxOutage fails the test);
//   - the Cluster deleted (its Machines, Secrets and machine templates
//     gone), and the same creation with
//     `MACHINEADM_RUNTIME=Systemd` (controlPlane.runtime: Systemd, the
//     binaries delivered by binarySources) at v1.37.2: 3 Ready control
//     planes, 3 etcd members, no control-plane pod on their Nodes.
//
// Lines "TIMING cp-…" are the figures.
func TestControlPlaneProvider(t *testing.T) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	start := time.Now()
	ce := e.startCAPI(ctx, t, providerOptions{loadBalancer: true})
	c := ce.mc.c
	t.Cleanup(func() {
		if t.Failed() {
			dumpControlPlane(t, c)
		}
	})

	// 1. Three control planes and the worker, at the previous minor.
	created := time.Now()
	generateCluster(ctx, t, e, ce, prevKubernetesVersion, "StaticPods")
	t.Logf("Cluster API objects applied %s after the start", time.Since(start).Round(time.Second))
	w := &capiWatcher{c: c, tokens: map[string]string{}}
	cpReady := waitCreated(ctx, t, w, created)
	timing(t, "cp-cluster-create-to-3-control-planes-ready", cpReady)
	timing(t, "cp-cluster-create-to-all-4-nodes-ready", time.Since(created))
	if err := waitControlPlaneStatus(ctx, c, 3, 3*time.Minute); err != nil {
		fatalln(t, err)
	}
	if err := waitEtcdMembers(ctx, c, 3, 2*time.Minute); err != nil {
		fatalln(t, err)
	}
	cs, err := w.workload(ctx)
	if err != nil {
		fatalln(t, err)
	}

	// 2. spec.version v1.36.3 → v1.37.2 with a Service probed throughout.
	// kube-proxy v1.36 exits on the machines' read-only nf_conntrack_max
	// unless its ConfigMap keeps it (keepConntrackMax).
	if err := keepConntrackMax(ctx, cs); err != nil {
		fatalln(t, err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalln(t, err)
	}
	var nodeNames []string
	for _, n := range nodes.Items {
		nodeNames = append(nodeNames, n.Name)
	}
	if err := waitDaemonPodsRunning(ctx, cs, "kube-proxy", podTimeout, nodeNames...); err != nil {
		fatalln(t, err)
	}
	clusterIP, err := startEchoService(ctx, cs, podTimeout)
	if err != nil {
		fatalln(t, err)
	}
	worker, err := ce.p.workerMachine(ctx, c)
	if err != nil {
		fatalln(t, err)
	}
	if err := startProbe(ctx, worker, clusterIP); err != nil {
		fatalln(t, err)
	}
	// The probes count from the first one that got through (kube-proxy's
	// pods were just restarted by keepConntrackMax).
	if err := waitProbeOK(ctx, worker, time.Minute); err != nil {
		fatalln(t, err)
	}
	before := controlPlaneMachineNames(ctx, t, c)
	tracker := startRolloutTracker(ctx, c, before)
	rolled := time.Now()
	cur := &controlplanev1.MachineadmControlPlane{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: cpName}, cur); err != nil {
		fatalln(t, err)
	}
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Version = kubernetesVersion
	if err := c.Patch(ctx, cur, patch); err != nil {
		fatalln(t, err)
	}
	rollErr := waitRolledOut(ctx, c, before, 3, 30*time.Minute)
	rollTime := time.Since(rolled)
	// Once every control plane runs the new version the controller moves
	// the kube-proxy DaemonSet to it; the probe goes on through that
	// rollout of kube-proxy's pods (the worker's too).
	var proxyErr error
	var proxyTime time.Duration
	proxyState := ""
	if rollErr == nil {
		proxyState, proxyErr = waitKubeProxyRolledOut(ctx, cs, kubernetesVersion, 5*time.Minute)
		proxyTime = time.Since(rolled) - rollTime
	}
	st, perr := stopProbe(ctx, worker)
	if perr == nil {
		st, perr = probeStatsSince(worker, rolled)
	}
	for _, l := range tracker.stop() {
		t.Log(l.text)
		if l.name != "" {
			timing(t, "cp-version-rollout-"+l.name, l.d)
		}
	}
	if rollErr != nil {
		fatalln(t, rollErr)
	}
	timing(t, "cp-version-rollout-3-machines", rollTime)
	if perr != nil {
		fatalln(t, perr)
	}
	t.Logf("version rollout %s → %s and kube-proxy's: probe of the Service from %s: %s", prevKubernetesVersion, kubernetesVersion, worker.Name, st)
	if st.total == 0 {
		errorln(t, "no probe of the Service ran during the version rollout")
	}
	if st.failed > 0 {
		errorf(t, "%d of %d probes of the Service failed during the version rollout and kube-proxy's (target 0)", st.failed, st.total)
	}
	if proxyErr != nil {
		fatalln(t, proxyErr)
	}
	t.Logf("after the control plane's rollout: %s", proxyState)
	timing(t, "cp-kube-proxy-rollout", proxyTime)
	if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: cpName}, cur); err != nil {
		fatalln(t, err)
	}
	if !conditions(cur.Status.Conditions, cpcontroller.KubeProxyUpToDateCondition) {
		errorf(t, "MachineadmControlPlane %s: %s is not True after kube-proxy's rollout: %+v", cpName, cpcontroller.KubeProxyUpToDateCondition, cur.Status.Conditions)
	}
	if err := waitEtcdMembers(ctx, c, 3, 2*time.Minute); err != nil {
		fatalln(t, err)
	}
	checkControlPlaneVersion(ctx, t, c, cs, kubernetesVersion)

	// 3. A MachineHealthCheck remediates a killed control-plane machine.
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
		fatalln(t, err)
	}
	before = controlPlaneMachineNames(ctx, t, c)
	victim := newestControlPlaneMachine(ctx, t, c)
	killed := time.Now()
	if err := ce.p.kill(victim); err != nil {
		fatalln(t, err)
	}
	t.Logf("killed control-plane machine %s", victim)
	if err := waitReplaced(ctx, c, before, victim, 3, 12*time.Minute); err != nil {
		fatalln(t, err)
	}
	if err := waitEtcdMembers(ctx, c, 3, 2*time.Minute); err != nil {
		fatalln(t, err)
	}
	timing(t, "cp-kill-to-remediated-3-ready", time.Since(killed))
	if err := c.Delete(ctx, mhc); err != nil {
		fatalln(t, err)
	}

	// 4. Scale to 1 with the API server probed through the endpoint.
	probe := startEndpointProbe(ctx, cs)
	scaled := time.Now()
	setReplicas(ctx, t, c, 1)
	if err := waitControlPlaneStatus(ctx, c, 1, 10*time.Minute); err != nil {
		fatalln(t, err)
	}
	if err := waitEtcdMembers(ctx, c, 1, 2*time.Minute); err != nil {
		fatalln(t, err)
	}
	timing(t, "cp-scale-3-to-1", time.Since(scaled))
	total, failures := probe.stop()
	t.Logf("scale 3 → 1: %d API probes through %s, %d failed%s", total, capiLBAddr, len(failures), probe.summary())
	if total == 0 {
		errorln(t, "no API probe ran during the scale-down")
	}
	if d := probe.longestOutage(); d > cpMaxOutage {
		errorf(t, "the API server did not answer for %s during the scale-down (%d of %d probes failed), want at most %s", d, len(failures), total, cpMaxOutage)
	}

	// 5. The same creation with runtime Systemd, once the first Cluster is
	// gone.
	deleted := time.Now()
	deleteCluster(ctx, t, c, 10*time.Minute)
	timing(t, "cp-cluster-delete", time.Since(deleted))
	created = time.Now()
	generateCluster(ctx, t, e, ce, kubernetesVersion, "Systemd")
	w = &capiWatcher{c: c, tokens: map[string]string{}}
	cpReady = waitCreated(ctx, t, w, created)
	timing(t, "cp-systemd-cluster-create-to-3-control-planes-ready", cpReady)
	if err := waitControlPlaneStatus(ctx, c, 3, 3*time.Minute); err != nil {
		fatalln(t, err)
	}
	if err := waitEtcdMembers(ctx, c, 3, 2*time.Minute); err != nil {
		fatalln(t, err)
	}
	if cs, err = w.workload(ctx); err != nil {
		fatalln(t, err)
	}
	checkNoStaticControlPlane(ctx, t, c, cs)
	timing(t, "cp-total", time.Since(start))
}

// generateCluster creates the Cluster as a user of the committed template
// does: `clusterctl generate cluster capiCluster --from
// contrib/cluster-api/templates/cluster-template.yaml` (3 control planes,
// 1 worker, the nspawn provider's kinds, MACHINEADM_RUNTIME=runtime) piped
// into `kubectl apply -f -` (the cache's kubectl), through cpOverlay.
func generateCluster(ctx context.Context, t *testing.T, e *env, ce *capiEnv, version, runtime string) {
	t.Helper()
	home := t.TempDir()
	kubeconfig := filepath.Join(ce.mc.m.Root, "etc/kubernetes/admin.conf")
	template := filepath.Join(e.repo, "contrib/cluster-api/templates/cluster-template.yaml")
	gctx, cancel := context.WithTimeout(ctx, clusterctlTimeout)
	defer cancel()
	gen := exec.CommandContext(gctx, filepath.Join(e.cache, "bin/clusterctl"), "generate", "cluster", capiCluster,
		"--from", template, "--kubernetes-version", version, "--control-plane-machine-count", "3",
		"--worker-machine-count", "1", "--target-namespace", capiNS, "--kubeconfig", kubeconfig)
	gen.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "xdg"), "CLUSTERCTL_DISABLE_VERSIONCHECK=true",
		"MACHINEADM_RECIPIENT="+ce.recipient, "MACHINEADM_RUNTIME="+runtime, "POD_CIDR="+podSubnet,
		"INFRASTRUCTURE_API_GROUP="+infraGroup, "INFRASTRUCTURE_API_VERSION="+infraVersion,
		"INFRASTRUCTURE_CLUSTER_KIND=NspawnCluster", "INFRASTRUCTURE_MACHINE_TEMPLATE_KIND=NspawnMachineTemplate")
	var stderr bytes.Buffer
	gen.Stderr = &stderr
	out, err := gen.Output()
	if err != nil {
		fatalf(t, "clusterctl generate cluster: %v\n%s", err, tail(stderr.String(), 30))
	}
	objs, err := splitManifests(out)
	if err != nil {
		fatalln(t, err)
	}
	var docs []string
	for _, u := range objs {
		if err := cpOverlay(t, e, u, ce.recipient, runtime); err != nil {
			fatalf(t, "%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			fatalln(t, err)
		}
		docs = append(docs, string(b))
	}
	apply := exec.CommandContext(gctx, e.binPath("kubectl"), "--kubeconfig", kubeconfig, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(strings.Join(docs, "---\n"))
	res, err := apply.CombinedOutput()
	if err != nil {
		fatalf(t, "kubectl apply: %v\n%s", err, res)
	}
	t.Logf("clusterctl generate cluster (%s, %s) | overlay | kubectl apply:\n%s", version, runtime, strings.TrimSpace(string(res)))
}

// cpOverlay is what the e2e adds to the generated objects: the machine
// spec of the e2e's machines (capiConfigSpec: the e2e registry's image
// repository, the kubelet and containerd settings of an nspawn machine,
// the host's resolver), keeping the template's runtime; for runtime
// Systemd the control-plane binaries' sources (the cache's binaries,
// mounted on every machine, SHA-256 pinned); a bounded drain of leaving
// control-plane Nodes. Every other field is the template's.
func cpOverlay(t *testing.T, e *env, u *unstructured.Unstructured, recipient, runtime string) error {
	toMap := func(v any) (map[string]any, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		return out, json.Unmarshal(b, &out)
	}
	switch u.GetKind() {
	case "MachineadmControlPlane":
		spec := capiConfigSpec(t, recipient, true)
		gotRuntime, _, _ := unstructured.NestedString(u.Object, "spec", "machineadmConfigSpec", "controlPlane", "runtime")
		if gotRuntime != runtime {
			return fmt.Errorf("the template gave runtime %q, want %q", gotRuntime, runtime)
		}
		spec.ControlPlane = &bootstrapv1.ControlPlaneSpec{Runtime: gotRuntime}
		if runtime == "Systemd" {
			src := &bootstrapv1.ControlPlaneBinarySources{}
			for name, to := range map[string]**bootstrapv1.RemoteSource{
				"etcd": &src.Etcd, "kube-apiserver": &src.KubeAPIServer,
				"kube-controller-manager": &src.KubeControllerManager, "kube-scheduler": &src.KubeScheduler,
			} {
				sum, err := fileSHA256(e.binPath(name))
				if err != nil {
					return err
				}
				*to = &bootstrapv1.RemoteSource{URL: "file://" + e2eBinDir + "/" + name, SHA256: sum}
			}
			spec.ControlPlane.BinarySources = src
		}
		m, err := toMap(spec)
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedMap(u.Object, m, "spec", "machineadmConfigSpec"); err != nil {
			return err
		}
		return unstructured.SetNestedField(u.Object, int64(60), "spec", "machineTemplate", "spec", "deletion", "nodeDrainTimeoutSeconds")
	case "MachineadmConfigTemplate":
		m, err := toMap(capiConfigSpec(t, recipient, false))
		if err != nil {
			return err
		}
		return unstructured.SetNestedMap(u.Object, m, "spec", "template", "spec")
	}
	return nil
}

// waitCreated waits for the Cluster's 3 control-plane Machines and its
// worker Running with Ready Nodes, logs each control-plane Machine's
// creation to Node Ready, and returns created to the last control plane
// Ready.
func waitCreated(ctx context.Context, t *testing.T, w *capiWatcher, created time.Time) time.Duration {
	t.Helper()
	up, err := w.waitMachines(ctx, 4, 20*time.Minute)
	if err != nil {
		fatalln(t, err)
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
	w.checkConfigs(ctx, t, up)
	return cpReady.Sub(created)
}

// rolloutLine is one line of a rollout's record; name and d are a
// per-Machine figure (empty name: text only).
type rolloutLine struct {
	text string
	name string
	d    time.Duration
}

// rolloutTracker records, every second, when each control-plane Machine
// not in before appears and gets a Ready Node, and when each Machine of
// before goes.
type rolloutTracker struct {
	cancel context.CancelFunc
	done   chan struct{}
	start  time.Time
	seen   map[string]time.Time
	ready  map[string]time.Time
	gone   map[string]time.Time
}

func startRolloutTracker(ctx context.Context, c client.Client, before map[string]bool) *rolloutTracker {
	ctx, cancel := context.WithCancel(ctx)
	r := &rolloutTracker{cancel: cancel, done: make(chan struct{}), start: time.Now(),
		seen: map[string]time.Time{}, ready: map[string]time.Time{}, gone: map[string]time.Time{}}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			ms, err := controlPlaneMachines(ctx, c)
			if err == nil {
				now := time.Now()
				live := map[string]bool{}
				for _, m := range ms {
					live[m.Name] = true
					if before[m.Name] {
						continue
					}
					if _, ok := r.seen[m.Name]; !ok {
						r.seen[m.Name] = m.CreationTimestamp.Time
					}
					if _, ok := r.ready[m.Name]; !ok && m.Status.NodeRef.Name != "" && conditions(m.Status.Conditions, clusterv1.MachineReadyCondition) {
						r.ready[m.Name] = now
					}
				}
				for n := range before {
					if _, ok := r.gone[n]; !ok && !live[n] {
						r.gone[n] = now
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return r
}

// conditions reports whether condition typ is True.
func conditions(cs []metav1.Condition, typ string) bool {
	for _, c := range cs {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// stop ends the tracker and returns its lines: each new Machine's creation
// to Ready Node, and the time from the rollout's start (or the previous
// old Machine's removal) to each old Machine's removal, which is one
// Machine's replacement (create, join, Ready, drain, etcd member removed,
// deleted).
func (r *rolloutTracker) stop() []rolloutLine {
	r.cancel()
	<-r.done
	var out []rolloutLine
	var news []string
	for n := range r.seen {
		news = append(news, n)
	}
	sort.Slice(news, func(i, j int) bool { return r.seen[news[i]].Before(r.seen[news[j]]) })
	for _, n := range news {
		if rd, ok := r.ready[n]; ok {
			out = append(out, rolloutLine{text: fmt.Sprintf("rollout: new Machine %s created %s after the change, Node Ready %s after its creation",
				n, r.seen[n].Sub(r.start).Round(time.Second), rd.Sub(r.seen[n]).Round(time.Second))})
		} else {
			out = append(out, rolloutLine{text: fmt.Sprintf("rollout: new Machine %s created %s after the change, not Ready", n, r.seen[n].Sub(r.start).Round(time.Second))})
		}
	}
	var olds []string
	for n := range r.gone {
		olds = append(olds, n)
	}
	sort.Slice(olds, func(i, j int) bool { return r.gone[olds[i]].Before(r.gone[olds[j]]) })
	prev := r.start
	for i, n := range olds {
		d := r.gone[n].Sub(prev)
		out = append(out, rolloutLine{text: fmt.Sprintf("rollout: old Machine %s gone %s after the change (%s after the previous step)",
			n, r.gone[n].Sub(r.start).Round(time.Second), d.Round(time.Second)), name: fmt.Sprintf("machine-%d", i+1), d: d})
		prev = r.gone[n]
	}
	return out
}

// waitKubeProxyRolledOut waits until the workload cluster's
// kube-system/kube-proxy DaemonSet's kube-proxy container has image tag
// version and the DaemonSet is rolled out: its controller observed that
// generation, and every pod it wants is updated and available. It returns
// what it saw last, for the log.
func waitKubeProxyRolledOut(ctx context.Context, cs kubernetes.Interface, version string, timeout time.Duration) (string, error) {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(ctx, "kube-proxy", metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		image := ""
		for _, ct := range ds.Spec.Template.Spec.Containers {
			if ct.Name == "kube-proxy" {
				image = ct.Image
			}
		}
		s := ds.Status
		last = fmt.Sprintf("kube-proxy DaemonSet: image %s, generation %d observed %d, %d desired, %d updated, %d available", image, ds.Generation, s.ObservedGeneration, s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberAvailable)
		_, tag, _ := strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
		return tag == version && s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
			s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberAvailable == s.DesiredNumberScheduled, nil
	})
	if err != nil {
		return last, fmt.Errorf("the kube-proxy DaemonSet did not roll out at %s within %s after the control plane's rollout (last: %s): %w", version, timeout, last, err)
	}
	return last, nil
}

// checkControlPlaneVersion checks that every control-plane Node runs a
// kubelet of version want, that a static kube-apiserver pod of want's
// image runs on each, and that the API server behind the endpoint says
// want.
func checkControlPlaneVersion(ctx context.Context, t *testing.T, c client.Client, cs *kubernetes.Clientset, want string) {
	t.Helper()
	ms, err := controlPlaneMachines(ctx, c)
	if err != nil {
		fatalln(t, err)
	}
	for _, m := range ms {
		node := m.Status.NodeRef.Name
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			errorln(t, err)
			continue
		}
		if v := n.Status.NodeInfo.KubeletVersion; v != want {
			errorf(t, "Node %s: kubelet %s, want %s", node, v, want)
		}
		p, err := cs.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, "kube-apiserver-"+node, metav1.GetOptions{})
		if err != nil {
			errorf(t, "kube-apiserver of %s: %v", node, err)
			continue
		}
		if img := p.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+want) {
			errorf(t, "kube-apiserver of %s runs %s, want version %s (kubeadm's join ran the version kubeadm-config names)", node, img, want)
		} else {
			t.Logf("control plane %s: kubelet %s, kube-apiserver %s", node, n.Status.NodeInfo.KubeletVersion, img)
		}
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		fatalln(t, err)
	}
	if v.GitVersion != want {
		errorf(t, "the API server behind %s says %s, want %s", capiLBAddr, v.GitVersion, want)
	}
}

// checkNoStaticControlPlane checks that no control-plane pod (static
// pods' mirrors, tier=control-plane) runs on the control-plane Nodes:
// runtime Systemd runs them as units.
func checkNoStaticControlPlane(ctx context.Context, t *testing.T, c client.Client, cs *kubernetes.Clientset) {
	t.Helper()
	ms, err := controlPlaneMachines(ctx, c)
	if err != nil {
		fatalln(t, err)
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "tier=control-plane"})
	if err != nil {
		fatalln(t, err)
	}
	for _, m := range ms {
		for _, p := range pods.Items {
			if p.Spec.NodeName == m.Status.NodeRef.Name {
				errorf(t, "runtime Systemd: control-plane pod %s on %s", p.Name, p.Spec.NodeName)
			}
		}
	}
	t.Logf("runtime Systemd: %d control-plane Nodes, no control-plane pod on them", len(ms))
}

// deleteCluster deletes the Cluster and waits until it and all its
// Machines are gone (Cluster API deletes the control plane, the
// MachineDeployment and their Machines; the nspawn provider stops the
// machines).
func deleteCluster(ctx context.Context, t *testing.T, c client.Client, timeout time.Duration) {
	t.Helper()
	cl := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: capiNS, Name: capiCluster}}
	if err := c.Delete(ctx, cl); err != nil {
		fatalln(t, err)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		ms := &clusterv1.MachineList{}
		if err := c.List(ctx, ms, client.InNamespace(capiNS), client.MatchingLabels{clusterv1.ClusterNameLabel: capiCluster}); err != nil {
			last = err.Error()
			return false, nil
		}
		err := c.Get(ctx, client.ObjectKeyFromObject(cl), &clusterv1.Cluster{})
		last = fmt.Sprintf("%d Machines, Cluster: %v", len(ms.Items), err)
		return len(ms.Items) == 0 && apierrors.IsNotFound(err), nil
	})
	if err != nil {
		fatalf(t, "Cluster %s not gone within %s (last: %s): %v", capiCluster, timeout, last, err)
	}
	// The control plane's CA and kubeconfig Secrets go with it (garbage
	// collection): the next Cluster of the same name makes its own. So do
	// the infrastructure machine templates, which the control plane and
	// the MachineDeployment make the Cluster own: one left behind would
	// be garbage-collected under the next Cluster that applies it again.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range []string{capiCluster + "-ca", capiCluster + "-etcd", capiCluster + "-kubeconfig"} {
			if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: n}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				last = fmt.Sprintf("Secret %s: %v", n, err)
				return false, nil
			}
		}
		for _, n := range []string{cpName, cpWorkers} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(infraGVK("NspawnMachineTemplate"))
			if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: n}, u); !apierrors.IsNotFound(err) {
				last = fmt.Sprintf("NspawnMachineTemplate %s: %v (owners %v)", n, err, u.GetOwnerReferences())
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		fatalf(t, "the deleted Cluster's Secrets or machine templates are still there (last: %s): %v", last, err)
	}
}

// waitProbeOK waits until m's probe (startProbe) logged a success.
func waitProbeOK(ctx context.Context, m *Machine, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(context.Context) (bool, error) {
		b, err := m.ReadFile(upgradeProbeLog)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = tail(string(b), 3)
		return strings.Contains(string(b), " ok\n"), nil
	})
	if err != nil {
		return fmt.Errorf("the Service's probe from %s never got through within %s (last: %s): %w", m.Name, timeout, last, err)
	}
	return nil
}

// probeStatsSince counts m's probes (startProbe's log) made at or after
// since.
func probeStatsSince(m *Machine, since time.Time) (probeStats, error) {
	var st probeStats
	b, err := m.ReadFile(upgradeProbeLog)
	if err != nil {
		return st, err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		ms, res, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || time.UnixMilli(n).Before(since) {
			continue
		}
		st.total++
		if res != "ok" {
			st.failed++
			st.failures = append(st.failures, time.UnixMilli(n))
		}
	}
	return st, nil
}

// setReplicas patches the control plane's replicas.
func setReplicas(ctx context.Context, t *testing.T, c client.Client, n int32) {
	t.Helper()
	mcp := &controlplanev1.MachineadmControlPlane{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: capiNS, Name: cpName}, mcp); err != nil {
		fatalln(t, err)
	}
	patch := client.MergeFrom(mcp.DeepCopy())
	mcp.Spec.Replicas = ptrTo(n)
	if err := c.Patch(ctx, mcp, patch); err != nil {
		fatalln(t, err)
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
		fatalln(t, err)
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
		fatalf(t, "control-plane Machines: %v (%d)", err, len(ms))
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
