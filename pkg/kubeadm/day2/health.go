package day2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/staticpod"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/cpcheck"
)

// Defaults of LocalHealth.
const (
	// DefaultHealthTimeout bounds the whole wait (kubeadm's upgrade
	// timeout for one component).
	DefaultHealthTimeout = 5 * time.Minute
	// DefaultHealthStable is how many healthy checks in a row make the
	// control plane healthy: one healthy answer may come from a component
	// that is about to fail again.
	DefaultHealthStable = 3
	// DefaultHealthInterval is the pause between two checks: kubeadm's
	// own (KubernetesAPICallRetryInterval, 500 ms), the period of its
	// waiter. It was 2 s, which cost `machineadm upgrade` of a control
	// plane 4 to 5 s at each of its two waits against plain kubeadm (make
	// bench-upgrade-e2e): a static pod is only checked once the kubelet
	// runs its current manifest and reports it Ready (WaitStaticPodsCurrent),
	// which kubeadm's startup probe of the API server, controller manager
	// and scheduler allows 10 s after the container started at the
	// earliest (initialDelaySeconds); a unit, which has no such gate,
	// must also stay healthy for UnitStableFor.
	DefaultHealthInterval = kubeadmconstants.KubernetesAPICallRetryInterval
	// DefaultUnitHealthStableFor is how long the healthy checks in a row
	// must span when a component runs as a unit (the Systemd runtime):
	// 4 s, what three checks 2 s apart spanned before the checks were
	// 500 ms apart. A unit that fails within it, after it first answered,
	// is not healthy. The Systemd runtime's upgrade holds each unit it
	// restarts to the same span (cpcheck.UnitStableFor).
	DefaultUnitHealthStableFor = cpcheck.UnitStableFor
	// healthCheckTimeout bounds one check (cpcheck.CheckTimeout). A check
	// counts as healthy only when the waiter did not poll again (it
	// returned within the retry interval): one that found a component
	// healthy only after retrying saw it down first, and starts a new run
	// of checks in a row.
	healthCheckTimeout = cpcheck.CheckTimeout
)

// LocalHealth is the wait, after the kubelet restarted or a control-plane
// component changed on a control plane, until this node's API server,
// controller manager and scheduler are healthy (WaitLocalControlPlane).
type LocalHealth struct {
	// AdminKubeconfig is the admin credential (host path); its server is
	// replaced by this node's API server (the API server's pod's
	// --advertise-address and --secure-port).
	AdminKubeconfig string
	// ManifestDir is the kubelet's static pod directory (host path): the
	// components' addresses and ports come from the manifests in it; a
	// component without one (the Systemd runtime) is derived from
	// SpecInitYAML with kubeadm's GetStaticPodSpecs, as its unit was.
	ManifestDir string
	// SpecInitYAML is the spec translated as an Init (its local endpoint
	// and component settings).
	SpecInitYAML []byte
	// Timeout bounds the whole wait; default DefaultHealthTimeout.
	Timeout time.Duration
	// Stable is the number of healthy checks in a row required; default
	// DefaultHealthStable.
	Stable int
	// Interval is the pause between checks; default
	// DefaultHealthInterval. The number of checks is bounded too:
	// Timeout/Interval + Stable.
	Interval time.Duration
	// UnitStableFor is how long the healthy checks in a row must span,
	// from the first to the last, when kube-apiserver,
	// kube-controller-manager or kube-scheduler has no manifest in
	// ManifestDir (the Systemd runtime: no kubelet probe holds a unit back
	// until it has run for a while); default DefaultUnitHealthStableFor.
	UnitStableFor time.Duration
	// AfterKubeadmUpgrade says that kubeadm's upgrade control-plane phase
	// has just restarted each static pod and waited until it ran its new
	// manifest (a new hash on its mirror pod, the pod Running). The wait
	// then skips WaitStaticPodsCurrent, whose Ready gate kubeadm's startup
	// probes hold 10 s or more past each start, and only checks health,
	// Stable times in a row. Set it only when the whole wait follows in
	// the same run (the kubelet's restart of a version upgrade, which in
	// a minor upgrade also replaces every static pod again), and not when
	// kubeadm may have skipped a component: one whose manifest it finds
	// already in place (a rerun after a crash) it leaves without waiting
	// for the kubelet to run it. False (the default) for every other
	// restart.
	AfterKubeadmUpgrade bool
	// Output receives one line when the components are healthy; nil
	// discards it.
	Output io.Writer
}

// WaitLocalControlPlane waits until the kubelet runs the static pods of
// the control-plane manifests in h.ManifestDir (WaitStaticPodsCurrent:
// each mirror pod carries the hash the kubelet gave its manifest and is
// Ready; none for the Systemd runtime), then until this node's control
// plane answers kubeadm's own health checks (apiclient.Waiter's
// WaitForControlPlaneComponents: the API server's /livez through the
// admin credential at its local endpoint, the controller manager's
// /healthz and the scheduler's /livez at their pods' bind addresses and
// ports) h.Stable times in a row, each time at the waiter's first try
// (a check where it had to try again counts as the first of a new run:
// the waiter retries for up to 10 s, which would hide a component that
// fails and comes back), and, when a component runs as a unit, over at
// least h.UnitStableFor. h.Timeout bounds both waits together.
// It gives up after h.Timeout or Timeout/Interval+Stable health checks,
// whichever comes first, with an *errclass.Error of class
// ControlPlaneUnhealthy and a hint.
func WaitLocalControlPlane(ctx context.Context, h LocalHealth) error {
	if h.Timeout <= 0 {
		h.Timeout = DefaultHealthTimeout
	}
	if h.Stable <= 0 {
		h.Stable = DefaultHealthStable
	}
	if h.Interval <= 0 {
		h.Interval = DefaultHealthInterval
	}
	if h.UnitStableFor <= 0 {
		h.UnitStableFor = DefaultUnitHealthStableFor
	}
	pods, address, port, err := localPods(h.ManifestDir, h.SpecInitYAML)
	if err != nil {
		return errclass.New(errclass.ControlPlaneUnhealthy, "", fmt.Errorf("this node's control-plane components: %w", err))
	}
	cfg, err := RESTConfig(h.AdminKubeconfig)
	if err != nil {
		return errclass.New(errclass.ControlPlaneUnhealthy, "the control plane's admin credential "+h.AdminKubeconfig+" must be readable", err)
	}
	cfg.Host = "https://" + net.JoinHostPort(address, port)
	cfg.Timeout = healthCheckTimeout
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return errclass.New(errclass.ControlPlaneUnhealthy, "", err)
	}
	start := time.Now()
	deadline := start.Add(h.Timeout)
	// The old containers may still answer the health checks while the
	// kubelet is about to replace them: first the kubelet must run the
	// pods of the manifests on disk.
	static := staticComponents(h.ManifestDir)
	if len(static) > 0 && !h.AfterKubeadmUpgrade {
		node, err := specNodeName(h.SpecInitYAML)
		if err != nil {
			return errclass.New(errclass.ControlPlaneUnhealthy, "", err)
		}
		if err := WaitStaticPodsCurrent(ctx, StaticPodsCurrent{
			Client: client, Node: node, Components: static, Timeout: h.Timeout, Interval: h.Interval,
		}); err != nil {
			return err
		}
		if h.Output != nil {
			fmt.Fprintf(h.Output, "[control-plane-check] the kubelet runs the current manifests of %s after %s\n", strings.Join(static, ", "), time.Since(start).Round(time.Second))
		}
	}
	// A component without a manifest runs as a unit: its run of healthy
	// checks must span UnitStableFor.
	var span time.Duration
	for _, name := range kubeadmconstants.ControlPlaneComponents {
		if !slices.Contains(static, name) {
			span = h.UnitStableFor
		}
	}
	res, err := cpcheck.WaitStable(ctx, cpcheck.Stable{
		Check: func(ctx context.Context, timeout time.Duration) error {
			return cpcheck.Check(ctx, client, pods, address, timeout, nil)
		},
		Timeout:      time.Until(deadline), // what WaitStaticPodsCurrent left
		CheckTimeout: healthCheckTimeout,
		Count:        h.Stable,
		For:          span,
		Interval:     h.Interval,
		FirstTry:     kubeadmconstants.KubernetesAPICallRetryInterval,
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil {
		if h.Output != nil {
			fmt.Fprintf(h.Output, "[control-plane-check] kube-apiserver at %s, kube-controller-manager and kube-scheduler healthy %d times in a row over %s after %s\n", cfg.Host, res.Streak, res.Span.Round(100*time.Millisecond), time.Since(start).Round(time.Second))
		}
		return nil
	}
	return errclass.New(errclass.ControlPlaneUnhealthy,
		"This node's control plane did not come back after the change: check `crictl ps -a` and the kubelet's log (`journalctl -u kubelet`), or `journalctl -u kube-apiserver -u kube-controller-manager -u kube-scheduler` for the Systemd runtime, then run machineadm upgrade again.",
		fmt.Errorf("the control plane on this node was not healthy %d times in a row%s within %s (%d checks): %w", h.Stable, spanText(span), h.Timeout, res.Checks, err))
}

// spanText says how long the checks in a row must span ("" no time).
func spanText(span time.Duration) string {
	if span <= 0 {
		return ""
	}
	return " over " + span.String()
}

// localPods are the pods of kube-apiserver, kube-controller-manager and
// kube-scheduler as kubeadm's waiter reads them (their health addresses
// and ports), with the API server's advertise address and port: from the
// manifests in manifestDir, or derived from the spec for a component
// that has none.
func localPods(manifestDir string, specInitYAML []byte) (map[string]*v1.Pod, string, string, error) {
	pods := map[string]*v1.Pod{}
	var derived map[string]v1.Pod
	address, port := "", ""
	for _, name := range kubeadmconstants.ControlPlaneComponents {
		p := filepath.Join(manifestDir, ManifestName(name))
		if _, err := os.Stat(p); manifestDir != "" && err == nil {
			pod, err := staticpod.ReadStaticPodFromDisk(p)
			if err != nil {
				return nil, "", "", err
			}
			pods[name] = pod
			continue
		}
		if derived == nil {
			cfg, err := SpecClusterConfiguration(specInitYAML)
			if err != nil {
				return nil, "", "", fmt.Errorf("the spec's kubeadm configuration: %w", err)
			}
			derived = controlplane.GetStaticPodSpecs(&cfg.ClusterConfiguration, &cfg.LocalAPIEndpoint, nil)
		}
		pod := derived[name]
		pods[name] = &pod
	}
	api := pods[kubeadmconstants.KubeAPIServer]
	if len(api.Spec.Containers) > 0 {
		address = argValue(api.Spec.Containers[0].Command, "advertise-address")
		port = argValue(api.Spec.Containers[0].Command, "secure-port")
	}
	if address == "" {
		return nil, "", "", errors.New("kube-apiserver has no --advertise-address")
	}
	if port == "" {
		port = fmt.Sprint(kubeadmconstants.KubeAPIServerPort)
	}
	return pods, address, port, nil
}

// staticComponents are the control-plane components (etcd and
// kubeadm's ControlPlaneComponents) that have a manifest in manifestDir
// ("" none), in that order.
func staticComponents(manifestDir string) []string {
	if manifestDir == "" {
		return nil
	}
	var out []string
	for _, name := range append([]string{kubeadmconstants.Etcd}, kubeadmconstants.ControlPlaneComponents...) {
		if _, err := os.Stat(filepath.Join(manifestDir, ManifestName(name))); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// specNodeName is the Node name of the spec's kubeadm configuration
// (its nodeRegistration.name, defaulted by kubeadm).
func specNodeName(specInitYAML []byte) (string, error) {
	cfg, err := SpecClusterConfiguration(specInitYAML)
	if err != nil {
		return "", fmt.Errorf("the spec's kubeadm configuration: %w", err)
	}
	if cfg.NodeRegistration.Name == "" {
		return "", errors.New("the spec's kubeadm configuration has no node name")
	}
	return cfg.NodeRegistration.Name, nil
}

// argValue is the value of --name=value in a command line, "" when it has
// none.
func argValue(cmd []string, name string) string {
	for _, a := range cmd {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// ReadManifest reads the static pod manifest at path (a host path) with
// kubeadm's own reader, for callers outside the kubeadm adapter.
func ReadManifest(path string) (*v1.Pod, error) {
	return staticpod.ReadStaticPodFromDisk(path)
}
