package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	"k8s.io/kubernetes/cmd/kubeadm/app/componentconfigs"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	controlplanephase "k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	etcdphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/etcd"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/apiclient"
	kubeadmconfig "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	etcdutil "k8s.io/kubernetes/cmd/kubeadm/app/util/etcd"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// SystemdRun is a phase of the Systemd runtime that replaces a kubeadm
// phase (kubeadm.Phase.Systemd).
type SystemdRun func(ctx context.Context, env *SystemdEnv) error

// SystemdRuntime says whether cfg runs its control plane as systemd units.
func SystemdRuntime(cfg *machineadm.MachineBootstrapConfig) bool {
	return cfg.Spec.ControlPlane != nil && cfg.Spec.ControlPlane.Runtime == machineadm.RuntimeSystemd
}

// systemdComponent is SystemdControlPlanePhase for some components.
func systemdComponent(components ...string) SystemdRun {
	return func(ctx context.Context, env *SystemdEnv) error {
		return SystemdControlPlanePhase(ctx, env, components...)
	}
}

// SystemdEnv is what the Systemd runtime's phases need from the run.
type SystemdEnv struct {
	// Config is the defaulted, validated hub spec (runtime Systemd).
	Config *machineadm.MachineBootstrapConfig
	// Docs are the kubeadm documents the kubeadm phases run with
	// (Translate with the run's Inputs).
	Docs *Documents
	// Root is the host's root, "/" on a real node.
	Root string
	// DryRun prints the plan (unit files with diffs) to Out and changes
	// nothing; nothing is started, added to etcd or waited for.
	DryRun bool
	// Out receives progress lines and dry-run plans. Default: discard.
	Out io.Writer
	// Services reloads and starts the units (service.NewSystemd()).
	// Required unless DryRun.
	Services cpunits.Manager
	// Exec runs systemd-sysusers. Default cpunits.RunCommand.
	Exec cpunits.Exec
	// KubeconfigDir holds kubeadm's kubeconfig files. Default
	// "/etc/kubernetes".
	KubeconfigDir string
	// Timeout bounds each wait (etcd health, each component's health).
	// Default: kubeadm's timeouts.controlPlaneComponentHealthCheck (4m0s
	// unless the configuration says otherwise).
	Timeout time.Duration
}

func (e *SystemdEnv) out() io.Writer {
	if e.Out == nil {
		return io.Discard
	}
	return e.Out
}

func (e *SystemdEnv) kubeconfigDir() string {
	if e.KubeconfigDir == "" {
		return kubeadmconstants.KubernetesDir
	}
	return e.KubeconfigDir
}

func (e *SystemdEnv) timeout(cfg *kubeadmapi.InitConfiguration) time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	if t := cfg.Timeouts; t != nil && t.ControlPlaneComponentHealthCheck != nil && t.ControlPlaneComponentHealthCheck.Duration > 0 {
		return t.ControlPlaneComponentHealthCheck.Duration
	}
	return 4 * time.Minute
}

func (e *SystemdEnv) check() error {
	if e.Config == nil || e.Docs == nil {
		return errors.New("the Systemd runtime's phases need the spec and its kubeadm documents")
	}
	if !e.DryRun && e.Services == nil {
		return errors.New("the Systemd runtime's phases need a service manager")
	}
	return nil
}

// controlPlane builds the derivation: from the documents on Init; on
// Join from the cluster's configuration (the kubeadm-config ConfigMap,
// read with admin.conf as kubeadm's join does) with this node's
// registration, local endpoint and patches. A dry-run Join, which has no
// cluster, uses kubeadm's defaults for the cluster part.
func (e *SystemdEnv) controlPlane() (*SystemdControlPlane, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if e.Config.Spec.Action == machineadm.ActionInit {
		return NewSystemdControlPlane(e.Config, e.Docs)
	}
	jc, err := kubeadmconfig.BytesToJoinConfiguration(e.Docs.YAML, kubeadmconfig.LoadOrDefaultConfigurationOptions{SkipCRIDetect: true})
	if err != nil {
		return nil, fmt.Errorf("loading the kubeadm join configuration: %w", err)
	}
	if jc.ControlPlane == nil {
		return nil, errors.New("the kubeadm join configuration has no controlPlane section")
	}
	var ic *kubeadmapi.InitConfiguration
	if e.DryRun {
		if ic, err = kubeadmconfig.DefaultedStaticInitConfiguration(); err != nil {
			return nil, err
		}
		ic.KubernetesVersion = e.Config.Spec.Kubernetes.Version
		fmt.Fprintln(e.out(), "[systemd] dry run: the cluster's configuration (kubeadm-config) would be read; kubeadm's defaults are shown")
	} else {
		client, err := kubeconfigutil.ClientSetFromFile(filepath.Join(e.kubeconfigDir(), kubeadmconstants.AdminKubeConfigFileName))
		if err != nil {
			return nil, err
		}
		if ic, err = kubeadmconfig.FetchInitConfigurationFromCluster(client, nil, "systemd", false, false, true, false); err != nil {
			return nil, fmt.Errorf("reading the cluster's kubeadm-config: %w", err)
		}
	}
	ic.NodeRegistration = jc.NodeRegistration
	ic.LocalAPIEndpoint = jc.ControlPlane.LocalAPIEndpoint
	ic.Patches = jc.Patches
	ic.Timeouts = jc.Timeouts
	return newSystemdControlPlaneFrom(e.Config, ic)
}

// install creates the accounts, applies the path rules and installs and
// starts the units.
func (e *SystemdEnv) install(ctx context.Context, s *SystemdControlPlane, rules []cpunits.PathRule, comps []cpunits.Component) error {
	prefix := "[systemd] "
	if e.DryRun {
		prefix = "[systemd] dry run, not done: "
	}
	line, err := cpunits.CreateUsers(ctx, e.Root, s.Accounts(), e.Exec, e.DryRun)
	if err != nil {
		return fmt.Errorf("creating the control-plane accounts: %w", err)
	}
	fmt.Fprintln(e.out(), prefix+line)
	changes, err := cpunits.ApplyPaths(e.Root, rules, e.DryRun)
	if err != nil {
		return fmt.Errorf("setting owners and modes: %w", err)
	}
	var m cpunits.Manager
	if !e.DryRun {
		m = e.Services
	}
	res, err := cpunits.Install(ctx, e.Root, comps, m, e.DryRun, e.out())
	for _, l := range append(changes, res.Changes...) {
		fmt.Fprintln(e.out(), prefix+l)
	}
	return err
}

// SystemdEtcdPhase replaces kubeadm's init phase "etcd" (etcd/local): it
// creates the accounts, gives the etcd data directory and keys their
// owners and modes, installs and starts etcd.service with kubeadm's etcd
// flags and waits, bounded by env.Timeout, for etcd's health endpoint
// (the startup probe kubeadm's pod has: /readyz on the metrics URL). With
// an external etcd it does nothing.
func SystemdEtcdPhase(ctx context.Context, env *SystemdEnv) error {
	s, err := env.controlPlane()
	if err != nil || !s.LocalEtcd() {
		return err
	}
	c, err := s.EtcdComponent(nil)
	if err != nil {
		return err
	}
	if err := env.install(ctx, s, s.EtcdPathRules(c), []cpunits.Component{c}); err != nil {
		return err
	}
	return env.waitEtcd(ctx, s)
}

// SystemdControlPlanePhase replaces kubeadm's init phase "control-plane"
// and join phase "control-plane-prepare/control-plane": it installs and
// starts the kube-apiserver, kube-controller-manager and kube-scheduler
// units with kubeadm's flags, after giving their keys and kubeconfigs the
// owners and modes the non-root accounts need. components limits it to
// some of them, by kubeadm's component names ("kube-apiserver",
// "kube-controller-manager", "kube-scheduler", as in kubeadm's sub-phases
// control-plane/apiserver, …); none means all three. It does not wait
// (SystemdWaitControlPlanePhase does).
func SystemdControlPlanePhase(ctx context.Context, env *SystemdEnv, components ...string) error {
	s, err := env.controlPlane()
	if err != nil {
		return err
	}
	all, err := s.ControlPlaneComponents()
	if err != nil {
		return err
	}
	comps := all
	if len(components) > 0 {
		comps = nil
		for _, name := range components {
			i := slices.IndexFunc(all, func(c cpunits.Component) bool { return c.Name == name })
			if i < 0 {
				return fmt.Errorf("unknown control-plane component %q (want one of %s)", name, strings.Join(kubeadmconstants.ControlPlaneComponents, ", "))
			}
			comps = append(comps, all[i])
		}
	}
	return env.install(ctx, s, s.ControlPlanePathRules(comps), comps)
}

// SystemdWaitControlPlanePhase replaces kubeadm's "wait-control-plane"
// (init and join): as kubeadm's phase does, it waits for the kubelet's
// healthz, then with kubeadm's own waiter (apiclient.KubeWaiter) for each
// component's health endpoint (kube-apiserver /livez through admin.conf
// pointed at this node, the controller manager's /healthz, the
// scheduler's /livez), each bounded by env.Timeout. The pods it reads the
// endpoints from are the pod specs the units were derived from, not
// manifests on disk.
func SystemdWaitControlPlanePhase(ctx context.Context, env *SystemdEnv) error {
	s, err := env.controlPlane()
	if err != nil {
		return err
	}
	if env.DryRun {
		fmt.Fprintln(env.out(), "[systemd] dry run: would wait for the kubelet and the control-plane units' health endpoints")
		return nil
	}
	client, err := env.localClient(s)
	if err != nil {
		return err
	}
	waiter := apiclient.NewKubeWaiter(client, env.timeout(s.cfg), env.out())
	if kc, ok := s.cfg.ComponentConfigs[componentconfigs.KubeletGroup]; ok {
		if k, ok := kc.Get().(*kubeletconfig.KubeletConfiguration); ok && k.HealthzPort != nil {
			if err := waiter.WaitForKubelet(k.HealthzBindAddress, *k.HealthzPort); err != nil {
				return fmt.Errorf("the kubelet is not healthy: %w", err)
			}
		}
	}
	pods := controlplanephase.GetStaticPodSpecs(&s.cfg.ClusterConfiguration, &s.cfg.LocalAPIEndpoint, nil)
	podMap := map[string]*v1.Pod{}
	for _, name := range kubeadmconstants.ControlPlaneComponents {
		p := pods[name]
		podMap[name] = &p
	}
	if err := waiter.WaitForControlPlaneComponents(podMap, s.cfg.LocalAPIEndpoint.AdvertiseAddress); err != nil {
		return fmt.Errorf("the control-plane units are not healthy (journalctl -u kube-apiserver -u kube-controller-manager -u kube-scheduler): %w", err)
	}
	return nil
}

// localClient is admin.conf pointed at this node's API server, as
// kubeadm's join WaitControlPlaneClient builds it.
func (e *SystemdEnv) localClient(s *SystemdControlPlane) (clientset.Interface, error) {
	cfg, err := clientcmd.LoadFromFile(filepath.Join(e.kubeconfigDir(), kubeadmconstants.AdminKubeConfigFileName))
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + net.JoinHostPort(s.cfg.LocalAPIEndpoint.AdvertiseAddress, strconv.Itoa(int(s.cfg.LocalAPIEndpoint.BindPort)))
	}
	return kubeconfigutil.ToClientSet(cfg)
}

// etcdProbeURL is the URL of the startup probe of kubeadm's etcd pod.
func (s *SystemdControlPlane) etcdProbeURL() (string, error) {
	pod := etcdphase.GetEtcdPodSpec(&s.cfg.ClusterConfiguration, &s.cfg.LocalAPIEndpoint, s.NodeName(), nil)
	p := pod.Spec.Containers[0].StartupProbe
	if p == nil || p.HTTPGet == nil {
		return "", errors.New("kubeadm's etcd pod has no HTTP startup probe")
	}
	g := p.HTTPGet
	port := g.Port.String()
	for _, cp := range pod.Spec.Containers[0].Ports {
		if g.Port.StrVal != "" && cp.Name == g.Port.StrVal {
			port = strconv.Itoa(int(cp.ContainerPort)) // a named port
		}
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(g.Host, port), Path: g.Path}
	if g.Scheme == v1.URISchemeHTTPS {
		u.Scheme = "https"
	}
	return u.String(), nil
}

// waitEtcd polls etcd's health endpoint every second until it answers 200
// or the timeout passes.
func (e *SystemdEnv) waitEtcd(ctx context.Context, s *SystemdControlPlane) error {
	u, err := s.etcdProbeURL()
	if err != nil {
		return err
	}
	if e.DryRun {
		fmt.Fprintln(e.out(), "[systemd] dry run: would wait for etcd at "+u)
		return nil
	}
	timeout := e.timeout(s.cfg)
	fmt.Fprintf(e.out(), "[systemd] waiting for etcd at %s (up to %v)\n", u, timeout)
	client := &http.Client{Timeout: 5 * time.Second}
	var last error
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err
			return false, nil
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("%s answered %s", u, resp.Status)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("etcd is not healthy after %v (journalctl -u etcd): %w (last: %v)", timeout, err, last)
	}
	return nil
}

// EtcdMemberAddRetries and EtcdMemberAddInterval are kubeadm's bounds for
// waiting until a new member has joined (phases/etcd: 8 × 5s).
const (
	EtcdMemberAddRetries  = 8
	EtcdMemberAddInterval = 5 * time.Second
)

// SystemdEtcdJoinPhase replaces kubeadm's join phase "etcd-join" for a
// local etcd, with kubeadm's etcd client (util/etcd) as kubeadm's
// CreateStackedEtcdStaticPodManifestFile uses it: it finds the cluster's
// etcd members (the client URLs of the control-plane Nodes' internal
// addresses and of the join endpoint's host, then the member list), adds
// this node as a learner (a rerun finds it already added), installs and
// starts etcd.service with the member list and
// --initial-cluster-state=existing, promotes the learner once it has
// caught up, and waits for the cluster to be available (8 × 5s). With an
// external etcd it does nothing.
func SystemdEtcdJoinPhase(ctx context.Context, env *SystemdEnv) error {
	s, err := env.controlPlane()
	if err != nil || !s.LocalEtcd() {
		return err
	}
	peerURL := etcdutil.GetPeerURL(&s.cfg.LocalAPIEndpoint)
	var members []EtcdMember
	var client *etcdutil.Client
	if env.DryRun {
		fmt.Fprintln(env.out(), "[systemd] dry run: would add etcd member "+peerURL)
	} else {
		kube, err := kubeconfigutil.ClientSetFromFile(filepath.Join(env.kubeconfigDir(), kubeadmconstants.AdminKubeConfigFileName))
		if err != nil {
			return err
		}
		endpoints, err := etcdEndpoints(ctx, kube, env.Config, s)
		if err != nil {
			return err
		}
		pki := s.cfg.CertificatesDir
		client, err = etcdutil.New(endpoints, filepath.Join(pki, kubeadmconstants.EtcdCACertName),
			filepath.Join(pki, kubeadmconstants.EtcdHealthcheckClientCertName), filepath.Join(pki, kubeadmconstants.EtcdHealthcheckClientKeyName))
		if err != nil {
			return fmt.Errorf("etcd client for %v: %w", endpoints, err)
		}
		if err := client.Sync(); err != nil {
			return fmt.Errorf("reading the etcd member list from %v: %w", endpoints, err)
		}
		list, err := client.AddMemberAsLearner(s.NodeName(), peerURL)
		if err != nil {
			return fmt.Errorf("adding etcd member %s: %w", peerURL, err)
		}
		for _, m := range list {
			members = append(members, EtcdMember{Name: m.Name, PeerURL: m.PeerURL})
		}
		fmt.Fprintf(env.out(), "[systemd] etcd member %s added as a learner; members %v\n", peerURL, members)
	}
	c, err := s.EtcdComponent(members)
	if err != nil {
		return err
	}
	if err := env.install(ctx, s, s.EtcdPathRules(c), []cpunits.Component{c}); err != nil {
		return err
	}
	if env.DryRun {
		return nil
	}
	id, err := client.GetMemberID(peerURL)
	if err != nil {
		return err
	}
	if err := client.MemberPromote(id); err != nil {
		return fmt.Errorf("promoting etcd learner %s: %w", peerURL, err)
	}
	if _, err := client.WaitForClusterAvailable(EtcdMemberAddRetries, EtcdMemberAddInterval); err != nil {
		return fmt.Errorf("the etcd cluster is not available after the join: %w", err)
	}
	return env.waitEtcd(ctx, s)
}

// etcdEndpoints are candidate client URLs of the existing etcd members:
// without static pods there are no etcd pods whose annotation kubeadm
// reads, so the control-plane Nodes' internal addresses and the join
// endpoint's host (port 2379) are tried; the client's Sync then reads the
// real member list from whichever answers.
func etcdEndpoints(ctx context.Context, kube clientset.Interface, cfg *machineadm.MachineBootstrapConfig, s *SystemdControlPlane) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(host string) {
		if host == "" || host == s.cfg.LocalAPIEndpoint.AdvertiseAddress {
			return
		}
		u := "https://" + net.JoinHostPort(host, strconv.Itoa(kubeadmconstants.EtcdListenClientPort))
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubeadmconstants.LabelNodeRoleControlPlane})
	if err != nil {
		return nil, fmt.Errorf("listing the control-plane nodes: %w", err)
	}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				add(a.Address)
			}
		}
	}
	if j := cfg.Spec.Join; j != nil {
		if host, _, err := net.SplitHostPort(j.APIServerEndpoint); err == nil && net.ParseIP(host) != nil {
			add(host)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no etcd member to join: no control-plane Node has an internal address and the join endpoint is not an IP address")
	}
	return out, nil
}
