package phases

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// The real UpgradeCluster and the static pods' ControlPlaneUpgrader: the
// kubeadm adapter's day-2 half (pkg/kubeadm/day2).
func init() {
	newCluster = func() UpgradeCluster { return kubeadmCluster{} }
	RegisterControlPlaneUpgrader(machineadm.RuntimeStaticPods, staticPodUpgrader{})
}

// kubernetesDir is kubeadm's directory on the machine.
const kubernetesDir = "/etc/kubernetes"

// Timeouts of the upgrade's waits.
const (
	// nodeVersionTimeout bounds the wait for the Node to report the new
	// kubelet version after the restart.
	nodeVersionTimeout = 3 * time.Minute
	// componentTimeout bounds the wait for one control-plane component.
	componentTimeout = 5 * time.Minute
)

// localHealthTimeout bounds the wait for this node's control plane to be
// healthy after the kubelet restarted or a component changed (a variable
// for tests).
var localHealthTimeout = componentTimeout

type kubeadmCluster struct{}

func adminConf(d *Data) string { return hostPathOrRoot(d, filepath.Join(kubernetesDir, "admin.conf")) }

func drainCredential(d *Data, kubeconfig string) string {
	if kubeconfig != "" {
		return kubeconfig
	}
	return adminConf(d)
}

func (kubeadmCluster) Drain(ctx context.Context, kubeconfig, node string, timeout time.Duration) ([]string, error) {
	c, err := day2.Client(kubeconfig)
	if err != nil {
		return nil, errclass.New(errclass.DrainFailed, "pass a credential that may evict pods with --kubeconfig, or --skip-drain", err)
	}
	return day2.Drainer{Client: c}.Drain(ctx, node, timeout)
}

func (kubeadmCluster) Uncordon(ctx context.Context, kubeconfig, node string) error {
	c, err := day2.Client(kubeconfig)
	if err != nil {
		return errclass.New(errclass.DrainFailed, "pass a credential that may patch the Node with --kubeconfig", err)
	}
	return day2.Drainer{Client: c}.Uncordon(ctx, node)
}

// upgradeConfig writes kubeadm's UpgradeConfiguration for the run (and
// the kubelet patch it names) into the work directory; it returns the
// file's host path.
func upgradeConfig(d *Data) (string, error) {
	o := day2.UpgradeOptions{
		KubernetesVersion:     d.Config.Spec.Kubernetes.Version,
		IgnorePreflightErrors: append(systemdIgnoredUpgradeChecks(d.Config), d.Config.Spec.Node.IgnorePreflightErrors...),
		CertificateRenewal:    true,
		SkipImagePulls:        systemdRuntime(d.Config),
	}
	if cp := d.Config.Spec.ControlPlane; cp != nil && cp.Etcd.External == nil {
		o.EtcdUpgrade = true
	}
	if _, content, ok, err := translate.KubeletPatch(d.Config); err != nil {
		return "", errclass.New(errclass.Internal, "", err)
	} else if ok {
		name, _, _, _ := translate.KubeletPatch(d.Config)
		if _, err := d.work().WriteFile("/patches/"+name, content, 0o600); err != nil {
			return "", errclass.New(errclass.HostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
		}
		o.PatchesDir = filepath.Join(d.WorkDir, "patches")
	}
	data, err := day2.UpgradeConfig(o)
	if err != nil {
		return "", errclass.New(errclass.Internal, "", err)
	}
	if _, err := d.work().WriteFile("/kubeadm-upgrade.yaml", data, 0o600); err != nil {
		return "", errclass.New(errclass.HostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
	}
	return filepath.Join(d.WorkDir, "kubeadm-upgrade.yaml"), nil
}

func upgradeVerb(cfg *machineadm.MachineBootstrapConfig) string {
	if FirstControlPlane(cfg) {
		return "apply"
	}
	return "node"
}

func (kubeadmCluster) KubeadmPhase(ctx context.Context, d *Data, name string) error {
	verb := upgradeVerb(d.Config)
	if verb == "apply" && name == "control-plane" && d.Upgrade.Plan.Has(upgrade.PhaseControlPlane) && !systemdRuntime(d.Config) {
		// Settings and version change together: kubeadm's upgrade
		// regenerates the control plane from the kubeadm-config
		// ConfigMap, so it gets the new settings first and each
		// component restarts once (the control-plane phase then finds
		// its manifests as the spec asks).
		yaml, err := specInitYAML(d.Config)
		if err != nil {
			return err
		}
		if _, err := day2.UploadSettings(adminConf(d), yaml); err != nil {
			return err
		}
		if d.Upgrade.kubeadm != nil {
			// The data read the ConfigMap before it had the settings.
			d.Upgrade.kubeadm.Forget()
		}
	}
	if err := kubeadmUpgrade(ctx, d, verb, name); err != nil {
		return err
	}
	if name == "control-plane" && d.Config.Spec.ControlPlane != nil && !systemdRuntime(d.Config) {
		// kubeadm waited for each new static pod to run; the last one's
		// restart may still be settling. Health only when the kubelet's
		// restart follows and is waited for whole (RestartKubelet).
		return waitLocalControlPlaneAfter(ctx, d, kubeletPhaseWaitsWhole(d))
	}
	return nil
}

// kubeletPhaseWaitsWhole says whether the wait right after kubeadm's
// control-plane phase may check health only (LocalHealth's
// AfterKubeadmUpgrade): the plan has the kubelet phase, this run does
// not leave it out (--skip-phases, or a run of one phase), and the run
// did not resume at kubeadm's control-plane phase. A resumed run finds the manifests that
// kubeadm moved in before the crash equal to its new ones, and kubeadm
// skips those components without waiting for the kubelet to run them:
// their old containers may still answer the health checks.
func kubeletPhaseWaitsWhole(d *Data) bool {
	if d.Upgrade == nil || d.Upgrade.Plan == nil || !d.Upgrade.Plan.Has(upgrade.PhaseKubelet) {
		return false
	}
	return d.opts.selected(upgrade.PhaseKubelet) && !d.opts.Skipped(upgrade.PhaseKubelet) && d.resumedAt != upgrade.PhaseKubeadm+"/control-plane"
}

// kubeadmUpgrade runs one phase of kubeadm's upgrade verb (runKubeadmUpgrade;
// a variable for tests, which cannot run kubeadm's upgrade).
var kubeadmUpgrade = runKubeadmUpgrade

func runKubeadmUpgrade(ctx context.Context, d *Data, verb, name string) error {
	class, hint := errclass.ControlPlaneUnhealthy, ""
	var all []string
	for _, k := range KubeadmUpgradePhases(verb) {
		all = append(all, k.Name)
		if k.Name == name {
			class, hint = k.Class, k.HintFor(d.Config)
		}
	}
	// One runner for the run's phases: kubeadm's upgrade data (the
	// cluster's configuration, a client) is built at the first and kept,
	// as kubeadm's whole `upgrade VERB` keeps it. The UpgradeConfiguration
	// comes from the spec alone, so it is written once, with the runner.
	r := d.Upgrade.kubeadm
	if r == nil || r.Verb != verb {
		path, err := upgradeConfig(d)
		if err != nil {
			return err
		}
		r = &day2.UpgradeRunner{Verb: verb, ConfigPath: path, Output: d.KubeadmOutput, All: all}
		if systemdRuntime(d.Config) {
			// No mirror pod to read the local endpoint from: the spec's.
			yaml, err := specInitYAML(d.Config)
			if err != nil {
				return err
			}
			ep, err := day2.LocalEndpoint(yaml)
			if err != nil {
				return errclass.New(errclass.Internal, "", err)
			}
			r.Local = &day2.LocalControlPlane{Endpoint: ep, AdminKubeconfig: adminConf(d), Addons: day2.SystemdAddons(adminConf(d))}
		}
		d.Upgrade.kubeadm = r
	}
	return r.Run(ctx, name, class, hint)
}

func (kubeadmCluster) RestartKubelet(ctx context.Context, d *Data, node, version string) ([]string, error) {
	var lines []string
	p := d.Upgrade.Plan
	if s, _ := p.Step(upgrade.PhaseKubelet); !p.Has(upgrade.PhaseKubeadm) && containsString(s.Paths, "spec.node.kubelet.config") {
		// No kubeadm upgrade wrote the kubelet's configuration: kubeadm's
		// kubelet-config phase writes it with the new patch.
		if err := runKubeadmUpgrade(ctx, d, "node", "kubelet-config"); err != nil {
			return nil, err
		}
		lines = append(lines, "kubeadm wrote the kubelet configuration with the new patch")
	}
	if d.Host == nil || d.Host.Services == nil {
		return lines, errclass.New(errclass.KubeletFailed, "", fmt.Errorf("no service manager to restart the kubelet"))
	}
	if err := d.Host.Services.Restart(ctx, "kubelet.service"); err != nil {
		return lines, errclass.New(errclass.KubeletFailed, "", fmt.Errorf("restarting kubelet.service: %w", err))
	}
	lines = append(lines, "restarted kubelet.service")
	c, err := day2.Client(hostPathOrRoot(d, translate.KubeletKubeconfigPath()))
	if err != nil {
		return lines, errclass.New(errclass.KubeletFailed, "", err)
	}
	if err := day2.WaitNodeVersion(ctx, c, node, version, nodeVersionTimeout); err != nil {
		return lines, err
	}
	lines = append(lines, "Node "+node+" reports kubelet "+version+" and Ready")
	if d.Config.Spec.ControlPlane == nil {
		return lines, nil
	}
	// The restarted kubelet may still be bringing the static pods back
	// (the Node reports Ready before they run): the next node's drain
	// would meet a refused connection.
	if err := waitLocalControlPlane(ctx, d); err != nil {
		return lines, err
	}
	return append(lines, "the control plane on this node is healthy"), nil
}

// waitLocalControlPlane waits, bounded (day2.WaitLocalControlPlane,
// componentTimeout), until this control plane's API server, controller
// manager and scheduler answer kubeadm's health checks several times in
// a row: after the kubelet restarted and after a component changed.
func waitLocalControlPlane(ctx context.Context, d *Data) error {
	return waitLocalControlPlaneAfter(ctx, d, false)
}

// waitLocalControlPlaneAfter is waitLocalControlPlane; afterKubeadm right
// after kubeadm's control-plane phase (day2.LocalHealth's
// AfterKubeadmUpgrade).
func waitLocalControlPlaneAfter(ctx context.Context, d *Data, afterKubeadm bool) error {
	yaml, err := specInitYAML(d.Config)
	if err != nil {
		return err
	}
	out := &lineWriter{emit: d.KubeadmOutput}
	defer out.Flush()
	return day2.WaitLocalControlPlane(ctx, day2.LocalHealth{
		AdminKubeconfig:     adminConf(d),
		ManifestDir:         hostPathOrRoot(d, filepath.Join(kubernetesDir, "manifests")),
		SpecInitYAML:        yaml,
		Timeout:             localHealthTimeout,
		AfterKubeadmUpgrade: afterKubeadm,
		Output:              out,
	})
}

func (kubeadmCluster) RenewCertificates(ctx context.Context, d *Data) ([]string, error) {
	yaml, err := specInitYAML(d.Config)
	if err != nil {
		return nil, err
	}
	cfg, err := day2.SpecClusterConfiguration(yaml)
	if err != nil {
		return nil, errclass.New(errclass.Internal, "", err)
	}
	cfg.CertificatesDir = hostPathOrRoot(d, cfg.CertificatesDir)
	now := time.Now()
	renewed, err := day2.RenewExpiring(&cfg.ClusterConfiguration, hostPathOrRoot(d, kubernetesDir), RenewBefore(d.Config), now)
	var lines []string
	for _, r := range renewed {
		lines = append(lines, renewedLine(r, now))
	}
	if err != nil {
		return lines, errclass.New(errclass.HostPreparationFailed, "", err)
	}
	return lines, nil
}

func (kubeadmCluster) RestartForCertificates(ctx context.Context, d *Data, component string, onlyStale bool) (Result, error) {
	u := d.Upgrade
	if u.backupDir == "" {
		u.backupDir = day2.BackupDir(hostPathOrRoot(d, kubernetesDir), time.Now())
	}
	out := &lineWriter{emit: d.KubeadmOutput}
	defer out.Flush()
	changed, lines, err := day2.RestartForCertificates(day2.StaticPodOptions{
		Component: component, AdminKubeconfig: adminConf(d),
		KubernetesDir: hostPathOrRoot(d, kubernetesDir), BackupDir: u.backupDir,
		Timeout: componentTimeout, Output: out, OnlyStale: onlyStale,
	}, nodeName(d))
	// A run killed after it swapped the manifest in resumes here and finds
	// the digest in place: the health the killed run did not see is
	// waited for then too, after a component certs-renew restarts (not
	// etcd nor the API server, which it never restarts).
	if err == nil && (changed || d.resumedAt == upgrade.PhaseCerts && day2.RestartsForCertificates(component)) {
		if err = waitLocalControlPlane(ctx, d); err == nil {
			lines = append(lines, "the control plane on this node is healthy")
		}
	}
	return Result{Changed: changed, Changes: lines}, err
}

// renewedLine is the report's line of a certificate renewed at now: it
// "expired" at its former expiry only when that was past, which within
// the renewal window it mostly is not. One that could not be renewed
// (an external CA's) is a warning (day2.WarningPrefix), which
// certsRenewPhase reports apart.
func renewedLine(r day2.Renewed, now time.Time) string {
	verb := "was to expire"
	if !r.Before.After(now) {
		verb = "expired"
	}
	if r.External {
		if verb == "was to expire" {
			verb = "expires"
		}
		return fmt.Sprintf("%s%s %s %s and was not renewed: its certificate authority has no key on this node (an external CA); renew it with that CA, then restart the components that read it (machineadm does not restart them for a certificate it did not renew)",
			day2.WarningPrefix, r.Name, verb, r.Before.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("renewed %s (%s %s, now expires %s)", r.Name, verb, r.Before.UTC().Format(time.RFC3339), r.After.UTC().Format(time.RFC3339))
}

// RenewBefore is the certificate renewal window of cfg:
// spec.controlPlane.pki.renewBefore (validated), or
// day2.DefaultRenewBefore.
func RenewBefore(cfg *machineadm.MachineBootstrapConfig) time.Duration {
	if cp := cfg.Spec.ControlPlane; cp != nil && cp.PKI.RenewBefore != "" {
		if w, err := time.ParseDuration(cp.PKI.RenewBefore); err == nil && w >= 0 {
			return w
		}
	}
	return day2.DefaultRenewBefore
}

// specInitYAML is the spec translated as the first control plane's
// (action Init, secrets as placeholders): the cluster settings it asks
// for, whichever node it is.
func specInitYAML(cfg *machineadm.MachineBootstrapConfig) ([]byte, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, errclass.New(errclass.Internal, "", err)
	}
	var c machineadm.MachineBootstrapConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, errclass.New(errclass.Internal, "", err)
	}
	c.Spec.Action, c.Spec.Join = machineadm.ActionInit, nil
	if c.Spec.ControlPlane != nil {
		c.Spec.ControlPlane.CertificateKey, c.Spec.ControlPlane.BootstrapTokens = nil, nil
		c.Spec.ControlPlane.PKI.Dir = ""
	}
	docs, err := translate.CheckSpec(&c, "spec")
	if err != nil {
		return nil, errclass.New(errclass.Internal, "", err)
	}
	return docs.YAML, nil
}

type staticPodUpgrader struct{}

func (staticPodUpgrader) UpgradeComponent(ctx context.Context, d *Data, component string) (Result, error) {
	if component == upgrade.ComponentEtcd && d.Config.Spec.ControlPlane.Etcd.External != nil {
		return Result{Message: "etcd is external"}, nil
	}
	yaml, err := specInitYAML(d.Config)
	if err != nil {
		return Result{}, err
	}
	u := d.Upgrade
	if u.backupDir == "" {
		u.backupDir = day2.BackupDir(hostPathOrRoot(d, kubernetesDir), time.Now())
	}
	annotations, err := componentAnnotations(d, component)
	if err != nil {
		return Result{}, err
	}
	out := &lineWriter{emit: d.KubeadmOutput}
	defer out.Flush()
	changed, lines, err := day2.UpgradeStaticPodComponent(ctx, day2.StaticPodOptions{
		Component: component, SpecInitYAML: yaml, AdminKubeconfig: adminConf(d), Annotations: annotations,
		Rollback:      apiServerConfigRollback(d, component),
		KubernetesDir: hostPathOrRoot(d, kubernetesDir), BackupDir: u.backupDir,
		Upload: FirstControlPlane(d.Config), Timeout: componentTimeout, Output: out,
	})
	var warnings []string
	for _, l := range lines {
		if w, ok := strings.CutPrefix(l, day2.WarningPrefix); ok {
			warnings = append(warnings, w)
		}
	}
	if err == nil && !changed {
		return Result{Changes: lines, Warnings: warnings, Message: component + " already runs the spec's settings"}, nil
	}
	if err == nil && component != upgrade.ComponentEtcd {
		if err = waitLocalControlPlane(ctx, d); err == nil {
			lines = append(lines, "the control plane on this node is healthy")
		}
	}
	return Result{Changed: changed, Changes: lines, Warnings: warnings}, err
}
