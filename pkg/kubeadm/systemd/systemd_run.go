package systemd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	"k8s.io/kubernetes/cmd/kubeadm/app/componentconfigs"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	controlplanephase "k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/apiclient"
	kubeadmconfig "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
	kubeconfigutil "k8s.io/kubernetes/cmd/kubeadm/app/util/kubeconfig"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/cpcheck"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
)

// SystemdRun is a phase of the Systemd runtime that replaces a kubeadm
// phase (run.Phase.Systemd in pkg/kubeadm/run).
type SystemdRun func(ctx context.Context, env *SystemdEnv) error

// SystemdRuntime says whether cfg runs its control plane as systemd units.
func SystemdRuntime(cfg *machineadm.MachineBootstrapConfig) bool {
	return cfg.Spec.ControlPlane != nil && cfg.Spec.ControlPlane.Runtime == machineadm.RuntimeSystemd
}

// SystemdComponent is SystemdControlPlanePhase for some components (names
// of kubeadmconstants: KubeAPIServer, ...; none: all three), as the
// SystemdRun of a row of the phase table.
func SystemdComponent(components ...string) SystemdRun {
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
	Docs *translate.Documents
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
	// Log receives each unit change and wait with its duration. Default:
	// discard.
	Log *slog.Logger
	// Timeout bounds each wait (etcd health, each component's health).
	// Default: kubeadm's timeouts.controlPlaneComponentHealthCheck (4m0s
	// unless the configuration says otherwise).
	Timeout time.Duration
	// DryRunDir, in a dry run, receives the unit and environment files a
	// real run would install, below it by their machine paths
	// (DIR/etc/systemd/system/kube-apiserver.service), as kubeadm's dry
	// run writes the static pod manifests into its directory. "" writes
	// none.
	DryRunDir string
	// HostCertificatesDir is where a real run keeps the certificates
	// (spec.controlPlane.pki.certificatesDir): a dry run's plan names the
	// owners and modes it would set there, not in the configuration's
	// certificates directory, which in a dry run is the dry-run
	// directory's. Default /etc/kubernetes/pki.
	HostCertificatesDir string

	// Plan is set in a dry run: what the phase would change, one line
	// each, for a person — unit and environment files by machine path
	// ("would write /etc/systemd/system/etcd.service (0600, 0:0, 1834
	// bytes)"), units enabled, accounts, owners and modes, etcd members
	// added, waits. Never file contents. Appended to by each phase run
	// with this env.
	Plan []string
}

// planned records line in Plan and prints it as a dry-run line.
func (e *SystemdEnv) planned(line string) {
	e.Plan = append(e.Plan, line)
	fmt.Fprintln(e.out(), "[systemd] dry run: "+line)
}

// planVerbs turn the past-tense change lines of the host packages into
// the plan's "would ..." lines.
var planVerbs = []struct{ done, would string }{
	{"wrote ", "would write "},
	{"rewrote ", "would rewrite "},
	{"appended to ", "would append to "},
	{"created ", "would create "},
	{"removed ", "would remove "},
	{"enabled ", "would enable "},
	{"set ", "would set "},
}

// planLine is the plan line of a change line of a dry run (cpunits,
// files.Change.Summary), or false for one that changes nothing.
func planLine(l string) (string, bool) {
	if l == "" || strings.HasSuffix(l, " unchanged") || strings.HasSuffix(l, " absent") {
		return "", false
	}
	if strings.HasPrefix(l, "would ") {
		return l, true
	}
	for _, v := range planVerbs {
		if rest, ok := strings.CutPrefix(l, v.done); ok {
			return v.would + rest, true
		}
	}
	return "would: " + l, true
}

// writeDryRunFiles writes the files of comps below e.DryRunDir by their
// machine paths (modes as installed, owner the caller).
func (e *SystemdEnv) writeDryRunFiles(comps []cpunits.Component) error {
	if e.DryRunDir == "" {
		return nil
	}
	dir := files.Dir{Root: e.DryRunDir}
	for _, c := range comps {
		c, err := cpunits.StampCredentials(e.Root, c)
		if err != nil {
			return err
		}
		rendered, err := cpunits.Render(c)
		if err != nil {
			return err
		}
		for _, f := range rendered {
			if _, err := dir.WriteFile(f.Path, f.Content, f.Mode); err != nil {
				return fmt.Errorf("writing the dry run's copy of %s: %w", f.Path, err)
			}
		}
	}
	return nil
}

func (e *SystemdEnv) out() io.Writer {
	if e.Out == nil {
		return io.Discard
	}
	return e.Out
}

func (e *SystemdEnv) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
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
	line, err := cpunits.CreateUsers(ctx, e.Root, cpunits.Accounts(s.LocalEtcd()), e.Exec, e.DryRun)
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
	start := time.Now()
	res, err := cpunits.Install(ctx, e.Root, comps, m, e.DryRun, e.out())
	all := append(append([]string{line}, changes...), res.Changes...)
	for _, l := range all[1:] {
		fmt.Fprintln(e.out(), prefix+l)
	}
	e.log().Info("control-plane units", "units", len(comps), "changed", res.Changed, "dryRun", e.DryRun, "duration", time.Since(start), "error", err)
	if err != nil || !e.DryRun {
		return err
	}
	host := e.HostCertificatesDir
	if host == "" {
		host = kubeadmconstants.KubernetesDir + "/pki"
	}
	for _, l := range all {
		if pl, ok := planLine(l); ok {
			e.Plan = append(e.Plan, hostCertPaths(pl, s.cfg.CertificatesDir, host))
		}
	}
	return e.writeDryRunFiles(comps)
}

// hostCertPaths rewrites the paths below dry, the certificates directory
// a dry run's configuration names, in the plan line l to the same paths
// below host, where a real run keeps them.
func hostCertPaths(l, dry, host string) string {
	dry, host = filepath.Clean(dry), filepath.Clean(host)
	if dry == host || dry == "." {
		return l
	}
	l = strings.ReplaceAll(l, " "+dry+"/", " "+host+"/")
	if strings.HasSuffix(l, " "+dry) {
		l = strings.TrimSuffix(l, dry) + host
	}
	return strings.ReplaceAll(l, " "+dry+" ", " "+host+" ")
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
// scheduler's /livez), each bounded by env.Timeout (and one second, also
// when a component accepts connections and never answers:
// cpcheck.Check). The pods it reads the
// endpoints from are the pod specs the units were derived from, not
// manifests on disk.
func SystemdWaitControlPlanePhase(ctx context.Context, env *SystemdEnv) error {
	s, err := env.controlPlane()
	if err != nil {
		return err
	}
	if env.DryRun {
		env.planned("would wait for the kubelet and the control-plane units' health endpoints")
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
	if err := cpcheck.Check(ctx, client, podMap, s.cfg.LocalAPIEndpoint.AdvertiseAddress, env.timeout(s.cfg), env.out()); err != nil {
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
