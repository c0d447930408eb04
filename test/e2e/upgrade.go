//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The previous minor the upgrade e2e bootstraps with (hack/e2e/lib.sh
// KUBE_PREV_VERSION; components.sh builds it into prevKubeDir of the
// cache, images.sh its images).
const (
	prevKubernetesVersion = "v1.36.3"
	prevKubeDir           = "kube-" + prevKubernetesVersion
	// Where the machines of the upgrade e2e see the cached binaries and
	// the previous minor's images (read-only).
	e2ePrevBinDir    = "/opt/machineadm-e2e/bin-" + prevKubernetesVersion
	prevImagesDir    = "/var/lib/machineadm-e2e/images-" + prevKubernetesVersion
	upgradeProbeUnit = "machineadm-e2e-upgrade-probe"
	upgradeProbeLog  = "/var/lib/machineadm-e2e-upgrade-probe.log"
	upgradeEcho      = "e2e-upgrade-echo"
)

// prevBinPath is a cached binary of the previous minor.
func (e *env) prevBinPath(name string) string {
	return filepath.Join(e.cache, prevKubeDir, "bin", name)
}

// prevKubeImages are the previous minor's images (in the cache's
// prevKubeDir/images), control-plane ones on control-plane machines.
var prevKubeImages = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"}

// prepareUpgradeMachine makes a machine of the previous minor: its
// kubelet, and besides the current images the previous minor's, imported
// from their read-only mount; the current and previous binaries mounted
// read-only for spec.host.files file:// sources. It checks the cached
// artefacts are there first.
func (e *env) prepareUpgradeMachine(m *Machine) error {
	for _, p := range []string{e.prevBinPath("kubelet"), filepath.Join(e.cache, prevKubeDir, "images", "kube-proxy.tar")} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("the previous minor's components are not built (make e2e-prepare builds them): %w", err)
		}
	}
	if err := copyFile(e.prevBinPath("kubelet"), filepath.Join(m.Root, "usr/bin/kubelet"), 0o755); err != nil {
		return err
	}
	m.BindRO = append(m.BindRO,
		filepath.Join(e.cache, "bin")+":"+e2eBinDir,
		filepath.Join(e.cache, prevKubeDir, "bin")+":"+e2ePrevBinDir,
		filepath.Join(e.cache, prevKubeDir, "images")+":"+prevImagesDir)
	// A control plane's images on control planes only: a worker (w1, and
	// the benchmark's w2) imports the node's.
	controlPlane := m.Name == cp1.Name || m.Name == cp2.Name || m.Name == cp3.Name
	names := slices.Clone(nodeImages)
	if controlPlane {
		names = append(slices.Clone(controlPlaneImages), names...)
	}
	for _, n := range prevKubeImages {
		if n == "kube-proxy" || controlPlane {
			names = append(names, prevImagesDir+"/"+n+".tar")
		}
	}
	return m.WriteFile("/etc/machineadm-e2e/images.list", []byte(strings.Join(names, "\n")+"\n"), 0o644)
}

// echoPreStopSeconds is how long an evicted echo pod keeps serving.
const echoPreStopSeconds = 3

// startEchoService deploys the Service the upgrade's probe reaches: two
// replicas of netcheck serve on two different nodes (required
// anti-affinity; control-plane nodes tolerated), a PodDisruptionBudget
// keeps one of them through a drain. It returns the ClusterIP once both
// pods are Ready.
func startEchoService(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) (string, error) {
	labels := map[string]string{"app": upgradeEcho}
	replicas := int32(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: upgradeEcho, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: "kubernetes.io/hostname",
						}},
					}},
					Tolerations: []corev1.Toleration{{
						Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
					}},
					Containers: []corev1.Container{{
						Name: "echo", Image: netcheckImage, ImagePullPolicy: corev1.PullNever,
						Args:           []string{"serve", "-addr", ":8080"},
						Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
						// A backend that is evicted keeps serving while
						// its endpoint leaves every node's kube-proxy
						// rules, as a Service backend that wants no lost
						// request does: killed at once (grace 0), the
						// drain's eviction failed the probes that kube-proxy
						// still sent to it for a moment (1 to 3 per drain).
						Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: echoPreStopSeconds}}},
					}},
					TerminationGracePeriodSeconds: ptr.To(int64(echoPreStopSeconds + 2)),
				},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	minAvailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: upgradeEcho, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: upgradeEcho, Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: labels,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	got, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = cs.CoreV1().Services("default").Get(ctx, upgradeEcho, metav1.GetOptions{})
	}
	if err != nil {
		return "", err
	}
	var nodes []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + upgradeEcho})
		if err != nil {
			return false, nil
		}
		nodes = nil
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && podReady(&p) {
				nodes = append(nodes, p.Spec.NodeName)
			}
		}
		return len(nodes) == 2, nil
	})
	if err != nil {
		return "", fmt.Errorf("echo pods Ready on %v within %s: %w", nodes, timeout, err)
	}
	return got.Spec.ClusterIP, nil
}

// startProbe runs, in m's host namespaces as a transient unit, a GET of
// http://IP/ every 200 ms (1 s timeout each) through kube-proxy's rules,
// one line per probe in upgradeProbeLog: "UNIXMILLIS ok|fail".
func startProbe(ctx context.Context, m *Machine, clusterIP string) error {
	if err := routeServices(ctx, m); err != nil {
		return err
	}
	script := fmt.Sprintf(`while :; do t=$(date +%%s%%3N); if %s; then echo "$t ok"; else echo "$t fail"; fi; sleep 0.2; done >>%s`, probeCommand(clusterIP), upgradeProbeLog)
	_, err := m.Exec(ctx, nil, "systemd-run", "--unit="+upgradeProbeUnit, "--collect", "/bin/sh", "-c", script)
	return err
}

// routeServices gives m a route to the Service range. The machines have
// no default route, so a ClusterIP has no route in a node's own namespace
// (pods have theirs through cni0): route the Service range out of the
// bridge interface from the node's address; kube-proxy's OUTPUT rules
// then translate it.
func routeServices(ctx context.Context, m *Machine) error {
	route := fmt.Sprintf(`dev=$(ip -o route get %s | sed -n 's/.* dev \([^ ]*\).*/\1/p'); ip route replace 10.96.0.0/12 dev "$dev" src %s`, bridgeIP, m.IP)
	_, err := m.Exec(ctx, nil, "/bin/sh", "-c", route)
	return err
}

// probeCommand is one probe of the Service at clusterIP: an HTTP GET
// through kube-proxy's rules that fails on no answer within 1 s or an
// HTTP error.
func probeCommand(clusterIP string) string {
	return "curl -fs -m 1 -o /dev/null http://" + clusterIP + "/"
}

// upgradeNoEndpoints is a Service that selects no pod: the probe's
// control, which must fail.
const upgradeNoEndpoints = "e2e-upgrade-no-endpoints"

// checkProbeMeasures checks, from m (after routeServices), that the probe
// command measures the Service: it succeeds against the echo Service at
// echoIP (within timeout: kube-proxy's rules may be on their way) and
// fails against a Service without endpoints, through the same route.
func checkProbeMeasures(ctx context.Context, cs kubernetes.Interface, m *Machine, echoIP string, timeout time.Duration) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: upgradeNoEndpoints, Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: map[string]string{"app": upgradeNoEndpoints},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	got, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = cs.CoreV1().Services("default").Get(ctx, upgradeNoEndpoints, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	probe := func(ip string) error {
		_, err := m.Exec(ctx, nil, "/bin/sh", "-c", probeCommand(ip))
		return err
	}
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = probe(echoIP)
		return last == nil, nil
	}); err != nil {
		return fmt.Errorf("%s: the probe of the echo Service %s never succeeds: %v", m.Name, echoIP, last)
	}
	// The control: kube-proxy has had the empty Service's rules as long
	// as the echo Service's; it must fail every time.
	for range 3 {
		if probe(got.Spec.ClusterIP) == nil {
			return fmt.Errorf("%s: the probe succeeds against %s, a Service without endpoints: it does not measure the Service", m.Name, got.Spec.ClusterIP)
		}
	}
	return nil
}

// probeStats is what one probe saw.
type probeStats struct {
	total, failed int
	// failures are the failed probes' times.
	failures []time.Time
}

// stopProbe stops m's probe and counts its results.
func stopProbe(ctx context.Context, m *Machine) (probeStats, error) {
	var st probeStats
	if _, err := m.Exec(ctx, nil, "systemctl", "stop", upgradeProbeUnit); err != nil {
		return st, err
	}
	b, err := m.ReadFile(upgradeProbeLog)
	if err != nil {
		return st, err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		ms, res, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		st.total++
		if res != "ok" {
			st.failed++
			if n, err := strconv.ParseInt(ms, 10, 64); err == nil {
				st.failures = append(st.failures, time.UnixMilli(n))
			}
		}
	}
	return st, nil
}

// String is "F failed of N" with the failures' times, runs of failures
// less than 2 s apart as one range "FIRST-LAST (COUNT)".
func (s probeStats) String() string {
	out := fmt.Sprintf("%d failed of %d", s.failed, s.total)
	for i := 0; i < len(s.failures); {
		j := i
		for j+1 < len(s.failures) && s.failures[j+1].Sub(s.failures[j]) < 2*time.Second {
			j++
		}
		out += " " + s.failures[i].UTC().Format("15:04:05.000")
		if j > i {
			out += fmt.Sprintf("-%s (%d)", s.failures[j].UTC().Format("15:04:05.000"), j-i+1)
		}
		i = j + 1
	}
	return out
}

// keepConntrackMax sets conntrack.maxPerCore: 0 in the kube-proxy
// ConfigMap kubeadm made (kube-proxy then leaves nf_conntrack_max as it
// is) and restarts the kube-proxy pods. kube-proxy v1.36 sets
// nf_conntrack_max at start even when the current value is larger (v1.37
// does not), and in a machine's network namespace that sysctl is read
// only: it would exit. kubeadm's upgrade keeps the setting (it reads the
// ConfigMap back).
func keepConntrackMax(ctx context.Context, cs kubernetes.Interface) error {
	cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "kube-proxy", metav1.GetOptions{})
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["config.conf"]), &cfg); err != nil {
		return fmt.Errorf("kube-proxy config.conf: %w", err)
	}
	ct, _ := cfg["conntrack"].(map[string]any)
	if ct == nil {
		ct = map[string]any{}
	}
	ct["maxPerCore"] = 0
	cfg["conntrack"] = ct
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	cm.Data["config.conf"] = string(b)
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return cs.CoreV1().Pods(metav1.NamespaceSystem).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "k8s-app=kube-proxy"})
}

func ptrInt64(v int64) *int64 { return &v }

// staticPodsCurrent checks, once, that every control-plane static pod on
// node runs the manifest the kubelet reads now: its mirror pod carries
// the hash the kubelet gave the manifest (kubernetes.io/config.hash of
// the file-sourced pod in the kubelet's /pods, through the API server's
// node proxy) and is Running and Ready. A mirror pod with another hash is
// a pod the kubelet is about to replace.
func staticPodsCurrent(ctx context.Context, cs kubernetes.Interface, node string) error {
	var list corev1.PodList
	if err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "pods").Do(ctx).Into(&list); err != nil {
		return fmt.Errorf("the kubelet's pods on %s: %w", node, err)
	}
	kubelet := map[string]string{}
	for _, p := range list.Items {
		if p.Annotations["kubernetes.io/config.source"] == "file" {
			kubelet[p.Name] = p.Annotations["kubernetes.io/config.hash"]
		}
	}
	var errs []string
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		name := c + "-" + node
		want, ok := kubelet[name]
		if !ok {
			errs = append(errs, "the kubelet runs no "+name)
			continue
		}
		p, err := cs.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if got := p.Annotations["kubernetes.io/config.hash"]; got != want {
			errs = append(errs, fmt.Sprintf("%s: mirror pod hash %s, the kubelet's %s (about to be replaced)", name, got, want))
		} else if p.Status.Phase != corev1.PodRunning || !podReady(p) {
			errs = append(errs, fmt.Sprintf("%s: %s ready=%v", name, p.Status.Phase, podReady(p)))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// watchEchoEndpoints logs, until ctx ends, every change of the echo
// Service's EndpointSlices with its time (UTC, ms): each endpoint's
// address, node and conditions. With the probes' failure times it shows
// whether a failure came from an endpoint still listed or from a node's
// kube-proxy that had not caught up.
func watchEchoEndpoints(ctx context.Context, cs kubernetes.Interface, logf func(string, ...any)) {
	// The client's timeout ends each watch; a new one replays the slices
	// unchanged: only a change is logged.
	last := map[string]string{}
	for ctx.Err() == nil {
		w, err := cs.DiscoveryV1().EndpointSlices("default").Watch(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + upgradeEcho})
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok {
				continue
			}
			var eps []string
			for _, e := range s.Endpoints {
				node := ""
				if e.NodeName != nil {
					node = *e.NodeName
				}
				eps = append(eps, fmt.Sprintf("%s@%s ready=%v serving=%v terminating=%v", strings.Join(e.Addresses, ","), node,
					ptr.Deref(e.Conditions.Ready, false), ptr.Deref(e.Conditions.Serving, false), ptr.Deref(e.Conditions.Terminating, false)))
			}
			now := strings.Join(eps, "; ")
			if ev.Type == watch.Deleted {
				now = "deleted"
			}
			if last[s.Name] == now {
				continue
			}
			last[s.Name] = now
			logf("%s endpoints %s %s: [%s]", time.Now().UTC().Format("15:04:05.000"), ev.Type, s.Name, now)
		}
		w.Stop()
	}
}

// kubeProxyLogTail is the last n lines of m's kube-proxy containers' logs
// (the kubelet's /var/log/pods in m's root), for a probe that failed.
func kubeProxyLogTail(m *Machine, n int) string {
	files, _ := filepath.Glob(filepath.Join(m.Root, "var/log/pods/kube-system_kube-proxy-*/kube-proxy/*.log"))
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		out = append(out, "== "+strings.TrimPrefix(f, m.Root), tail(string(b), n))
	}
	return strings.Join(out, "\n")
}
