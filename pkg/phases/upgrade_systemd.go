package phases

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/kubeadm/systemd"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
)

func init() {
	RegisterControlPlaneUpgrader(machineadm.RuntimeSystemd, systemdUpgrader{})
}

// systemdUpgrader is the Systemd runtime's ControlPlaneUpgrader: the
// component's unit, environment file and binary are replaced
// (systemd.SystemdUpgrade.Component: backed up, restarted, checked
// healthy, rolled back when not).
type systemdUpgrader struct{}

// UpgradeComponent replaces component's unit. A rollback is class
// RolledBack; a unit that stays unhealthy after it, ControlPlaneUnhealthy.
// On the first control plane the spec's in-place settings are then stored
// in the kubeadm-config ConfigMap (storeSettings), as the static pods'
// upgrader stores them after each component: whether or not the unit
// changed, so that a rerun after a crash between the unit and the
// ConfigMap stores them.
func (systemdUpgrader) UpgradeComponent(ctx context.Context, d *Data, component string) (Result, error) {
	docs, err := upgradeDocs(d)
	if err != nil {
		return Result{}, err
	}
	out := &lineWriter{emit: d.KubeadmOutput}
	defer out.Flush()
	env := &systemd.SystemdEnv{Config: d.Config, Docs: docs, Root: d.Root, DryRun: d.DryRun, Out: out, Log: d.log(), Services: d.unitManager()}
	if d.KubeadmOutput == nil {
		env.Out = d.out()
	}
	if cp := d.Config.Spec.ControlPlane; cp != nil {
		env.HostCertificatesDir = cp.PKI.CertificatesDir
	}
	r, err := (&systemd.SystemdUpgrade{Env: env, Healthy: systemdUnitHealthy}).Component(ctx, component)
	res := Result{Changed: r.Changed, Changes: r.Changes}
	if d.DryRun {
		res.Changes = env.Plan
		if err == nil && FirstControlPlane(d.Config) {
			res.Changes = append(res.Changes, storeSettingsPlan)
		}
	}
	if err == nil {
		if d.DryRun || !FirstControlPlane(d.Config) {
			return res, nil
		}
		stored, err := storeSettings(d)
		if stored {
			res.Changed = true
			res.Changes = append(res.Changes, "kubeadm-config ConfigMap updated")
		}
		return res, err
	}
	var classed *errclass.Error
	switch {
	case errors.As(err, &classed):
	case r.RolledBack && !errors.Is(err, cpunits.ErrRollbackUnhealthy):
		err = errclass.New(errclass.RolledBack, "the unit was put back as it was: see journalctl -u "+component+", fix the spec (binary, flags) and run machineadm upgrade again", err)
	default:
		err = errclass.New(errclass.ControlPlaneUnhealthy, "journalctl -u "+component, err)
	}
	return res, err
}

// upgradeDocs are the kubeadm documents the units are derived from in an
// upgrade: the run's own when a phase of it prepared them (d.kubeadm),
// else the spec translated with placeholders for the secrets that only a
// bootstrap consumes (the join token, the certificate key, the bootstrap
// tokens: no unit carries them, and their files may be gone by now, as
// upgrade's inputs-check says) and without importing the CA set of
// spec.controlPlane.pki.dir (bootstrap only), as specInitYAML translates
// it; kubeadm's patches directory is the run's work directory's, with
// the kubelet's patch, as a bootstrap's. Outside an upgrade,
// prepareKubeadm's.
func upgradeDocs(d *Data) (*translate.Documents, error) {
	if d.kubeadm != nil {
		return d.kubeadm.docs, nil
	}
	if d.Upgrade == nil {
		st, _, err := prepareKubeadm(d)
		if err != nil {
			return nil, err
		}
		return st.docs, nil
	}
	in := translate.PlaceholderInputs(d.Config)
	if translate.KubeletConfig(d.Config) != nil {
		// kubeadm reads the directory it names for each component's
		// patches: the kubelet's patch is written there, as a bootstrap
		// and kubeadm's upgrade configuration (upgradeConfig) write it.
		in.PatchesDir = filepath.Join(d.WorkDir, "patches")
		name, content, _, err := translate.KubeletPatch(d.Config)
		if err != nil {
			return nil, errclass.New(errclass.Internal, "", err)
		}
		if _, err := d.work().WriteFile("/patches/"+name, content, 0o600); err != nil {
			return nil, errclass.New(errclass.HostPreparationFailed, "check that "+d.WorkDir+" is writable", err)
		}
	}
	docs, err := translate.Translate(d.Config, in)
	if err != nil {
		return nil, errclass.New(errclass.Internal, "kubeadm's validation refused the configuration machineadm derived at run time; run `machineadm config kubeadm -f SPEC` and report this", err)
	}
	return docs, nil
}

// systemdUnitHealthy, when set, replaces the units' health checks
// (systemd.SystemdUpgrade.Healthy): tests, which run no units. Nil in
// production.
var systemdUnitHealthy func(ctx context.Context, component string) error

// storeSettingsPlan is what a dry run on the first control plane says it
// would store after a component (either runtime).
const storeSettingsPlan = "would store the spec's in-place control-plane settings (image repository, the components' extra arguments and volumes, the external etcd endpoints and files) in the kubeadm-config ConfigMap, over the cluster's stored configuration (its Kubernetes version kept), where it does not carry them yet"

// storeSettings stores the spec's in-place settings in the kubeadm-config
// ConfigMap when it does not carry them yet (day2.UploadSettings: the
// cluster's stored configuration, its KubernetesVersion among it, with
// the settings laid over it); it says whether it stored. After a store,
// kubeadm's kept upgrade data, read from the ConfigMap before, is built
// again (UpgradeRunner.Forget): kubeadm's upload-config phase, after the
// units of a version upgrade, then stores the new version with these
// settings instead of the ones it read at its preflight. Errors are
// classified as day2 classifies them (ControlPlaneUnhealthy).
func storeSettings(d *Data) (bool, error) {
	yaml, err := specInitYAML(d.Config)
	if err != nil {
		return false, err
	}
	stored, err := day2.UploadSettings(adminConf(d), yaml)
	if stored && d.Upgrade != nil && d.Upgrade.kubeadm != nil {
		d.Upgrade.kubeadm.Forget()
	}
	return stored, err
}

// systemdIgnoredUpgradeChecks are kubeadm upgrade health checks that do
// not apply to a Systemd control plane: StaticPodManifest looks for the
// control-plane manifests, which the units replace (kubeadm's
// phases/upgrade CheckClusterHealth). None for static pods.
func systemdIgnoredUpgradeChecks(cfg *machineadm.MachineBootstrapConfig) []string {
	if !systemd.SystemdRuntime(cfg) {
		return nil
	}
	return []string{"StaticPodManifest"}
}
