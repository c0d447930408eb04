package day2

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"k8s.io/apimachinery/pkg/util/sets"
	clientset "k8s.io/client-go/kubernetes"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmv1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/validation"
	upgradephases "k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/upgrade"
	applyphases "k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/upgrade/apply"
	nodephases "k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/upgrade/node"
	"k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/workflow"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
)

// LocalControlPlane is what kubeadm's `upgrade apply` and `upgrade node`
// would find out about this node's control plane from its kube-apiserver
// mirror pod, given instead: a control plane run as systemd units
// (runtime Systemd) has no mirror pod, and kubeadm's commands wait for
// its annotation kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint
// (configutil.GetAPIEndpoint) until they time out.
type LocalControlPlane struct {
	// Endpoint is this node's API server: its advertise address and bind
	// port (the spec's spec.controlPlane.advertiseAddress and bindPort,
	// defaulted by kubeadm as at bootstrap: LocalEndpoint).
	Endpoint kubeadmapi.APIEndpoint
	// AdminKubeconfig is the admin credential (host path), the client of
	// every phase, as kubeadm's on a control plane.
	AdminKubeconfig string
	// Addons replaces kubeadm's addon/coredns and addon/kube-proxy phases
	// (SystemdAddons); nil keeps kubeadm's.
	Addons *workflow.Phase
}

// LocalEndpoint is the local API endpoint of the spec translated as an
// Init (specInitYAML), after kubeadm's loader defaulted it (an empty
// advertise address is the host's default-route address, the one the
// units were rendered with).
func LocalEndpoint(specInitYAML []byte) (kubeadmapi.APIEndpoint, error) {
	cfg, err := SpecClusterConfiguration(specInitYAML)
	if err != nil {
		return kubeadmapi.APIEndpoint{}, err
	}
	if cfg.LocalAPIEndpoint.AdvertiseAddress == "" || cfg.LocalAPIEndpoint.BindPort <= 0 {
		return kubeadmapi.APIEndpoint{}, fmt.Errorf("the spec's local API endpoint %q:%d is incomplete", cfg.LocalAPIEndpoint.AdvertiseAddress, cfg.LocalAPIEndpoint.BindPort)
	}
	return cfg.LocalAPIEndpoint, nil
}

// localPhases are kubeadm v1.37's phases of `upgrade VERB` (its
// cmd/upgrade apply.go and node.go), in kubeadm's order, with the addon
// phase replaced when addons is set.
func localPhases(verb string, addons *workflow.Phase) []workflow.Phase {
	addon := upgradephases.NewAddonPhase()
	if addons != nil {
		addon = *addons
	}
	if verb == "apply" {
		return []workflow.Phase{
			applyphases.NewPreflightPhase(),
			applyphases.NewControlPlanePhase(),
			applyphases.NewUploadConfigPhase(),
			applyphases.NewKubeconfigPhase(),
			upgradephases.NewKubeletConfigPhase(),
			applyphases.NewBootstrapTokenPhase(),
			addon,
			upgradephases.NewPostUpgradePhase(),
		}
	}
	return []workflow.Phase{
		nodephases.NewPreflightPhase(),
		nodephases.NewControlPlane(),
		nodephases.NewKubeconfigPhase(),
		upgradephases.NewKubeletConfigPhase(),
		addon,
		upgradephases.NewPostUpgradePhase(),
	}
}

// localRunner runs kubeadm's phases of `upgrade VERB` with kubeadm's
// workflow runner and phases, on upgrade data built from a
// LocalControlPlane (localData) instead of the command's. It keeps the
// workflow runner, and so the data, between the phases it runs.
type localRunner struct {
	verb string
	r    *workflow.Runner
}

// newLocalRunner returns the runner of verb's phases whose data is read
// from the UpgradeConfiguration file configPath and l, printing to out.
func newLocalRunner(verb, configPath string, l *LocalControlPlane, out io.Writer) *localRunner {
	r := workflow.NewRunner()
	for _, p := range localPhases(verb, l.Addons) {
		r.AppendPhase(p)
	}
	r.SetDataInitializer(func(_ *cobra.Command, _ []string) (workflow.RunData, error) {
		return newLocalData(verb, configPath, l, out)
	})
	return &localRunner{verb: verb, r: r}
}

// run runs the phase name (hidden ones too: the runner's filter takes
// any phase).
func (lr *localRunner) run(name string) error {
	lr.r.Options.FilterPhases = []string{name}
	if err := lr.r.Run(nil); err != nil {
		return fmt.Errorf("kubeadm upgrade %s phase %s: %w", lr.verb, name, err)
	}
	return nil
}

// localData is kubeadm's upgrade data (the apply and node phases' Data
// interfaces) as kubeadm's newApplyData and newNodeData build it from an
// UpgradeConfiguration file, except that the local API endpoint is l's
// instead of the mirror pod's annotation, and the node is a control plane
// (kubeadm asks whether /etc/kubernetes/manifests/kube-apiserver.yaml
// exists).
type localData struct {
	verb        string
	cfg         *kubeadmapi.UpgradeConfiguration
	initCfg     *kubeadmapi.InitConfiguration
	client      clientset.Interface
	ignore      sets.Set[string]
	patchesDir  string
	etcdUpgrade bool
	renewCerts  bool
	kubeconfig  string
	out         io.Writer
}

func newLocalData(verb, configPath string, l *LocalControlPlane, out io.Writer) (*localData, error) {
	cfg, err := configutil.LoadOrDefaultUpgradeConfiguration(configPath, &kubeadmv1beta4.UpgradeConfiguration{}, configutil.LoadOrDefaultConfigurationOptions{})
	if err != nil {
		return nil, err
	}
	client, err := Client(l.AdminKubeconfig)
	if err != nil {
		return nil, err
	}
	initCfg, err := configutil.FetchInitConfigurationFromCluster(client, nil, "upgrade", true, false, true, false)
	if err != nil {
		return nil, fmt.Errorf("unable to fetch the kubeadm-config ConfigMap: %w", err)
	}
	initCfg.LocalAPIEndpoint = l.Endpoint
	d := &localData{verb: verb, cfg: cfg, initCfg: initCfg, client: client, kubeconfig: l.AdminKubeconfig, out: out}
	var fromFile []string
	var patches *kubeadmapi.Patches
	if verb == "apply" {
		fromFile, patches = cfg.Apply.IgnorePreflightErrors, cfg.Apply.Patches
		d.etcdUpgrade, d.renewCerts = boolOr(cfg.Apply.EtcdUpgrade, true), boolOr(cfg.Apply.CertificateRenewal, true)
		initCfg.NodeRegistration.ImagePullPolicy = cfg.Apply.ImagePullPolicy
		initCfg.NodeRegistration.ImagePullSerial = cfg.Apply.ImagePullSerial
		// `upgrade apply` moves the configuration to its target version.
		initCfg.KubernetesVersion = cfg.Apply.KubernetesVersion
	} else {
		fromFile, patches = cfg.Node.IgnorePreflightErrors, cfg.Node.Patches
		d.etcdUpgrade, d.renewCerts = boolOr(cfg.Node.EtcdUpgrade, true), boolOr(cfg.Node.CertificateRenewal, true)
	}
	if d.ignore, err = validation.ValidateIgnorePreflightErrors(nil, fromFile); err != nil {
		return nil, err
	}
	initCfg.NodeRegistration.IgnorePreflightErrors = sets.List(d.ignore)
	if patches != nil {
		d.patchesDir = patches.Directory
	}
	return d, nil
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func (d *localData) EtcdUpgrade() bool                       { return d.etcdUpgrade }
func (d *localData) RenewCerts() bool                        { return d.renewCerts }
func (d *localData) DryRun() bool                            { return false }
func (d *localData) Cfg() *kubeadmapi.UpgradeConfiguration   { return d.cfg }
func (d *localData) InitCfg() *kubeadmapi.InitConfiguration  { return d.initCfg }
func (d *localData) IsControlPlaneNode() bool                { return true }
func (d *localData) Client() clientset.Interface             { return d.client }
func (d *localData) IgnorePreflightErrors() sets.Set[string] { return d.ignore }
func (d *localData) PatchesDir() string                      { return d.patchesDir }
func (d *localData) OutputWriter() io.Writer                 { return d.out }
func (d *localData) KubeConfigDir() string                   { return kubeadmconstants.KubernetesDir }
func (d *localData) KubeletDir() string                      { return kubeadmconstants.KubeletRunDirectory }
func (d *localData) KubeConfigPath() string                  { return d.kubeconfig }
func (d *localData) SessionIsInteractive() bool              { return false }
func (d *localData) AllowExperimentalUpgrades() bool {
	return d.cfg.Apply.AllowExperimentalUpgrades != nil && *d.cfg.Apply.AllowExperimentalUpgrades
}
func (d *localData) AllowRCUpgrades() bool {
	return d.cfg.Apply.AllowRCUpgrades != nil && *d.cfg.Apply.AllowRCUpgrades
}
func (d *localData) ForceUpgrade() bool {
	return d.cfg.Apply.ForceUpgrade != nil && *d.cfg.Apply.ForceUpgrade
}

var (
	_ applyphases.Data = (*localData)(nil)
	_ nodephases.Data  = (*localData)(nil)
)
