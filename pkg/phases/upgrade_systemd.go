package phases

import (
	"context"
	"errors"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/kubeadm/systemd"
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
func (systemdUpgrader) UpgradeComponent(ctx context.Context, d *Data, component string) (Result, error) {
	st := d.kubeadm
	if st == nil {
		var err error
		if st, _, err = prepareKubeadm(d); err != nil {
			return Result{}, err
		}
	}
	out := &lineWriter{emit: d.KubeadmOutput}
	defer out.Flush()
	env := &systemd.SystemdEnv{Config: d.Config, Docs: st.docs, Root: d.Root, DryRun: d.DryRun, Out: out, Log: d.log(), Services: d.unitManager()}
	if d.KubeadmOutput == nil {
		env.Out = d.out()
	}
	if cp := d.Config.Spec.ControlPlane; cp != nil {
		env.HostCertificatesDir = cp.PKI.CertificatesDir
	}
	r, err := (&systemd.SystemdUpgrade{Env: env}).Component(ctx, component)
	res := Result{Changed: r.Changed, Changes: r.Changes}
	if d.DryRun {
		res.Changes = env.Plan
	}
	if err == nil {
		return res, nil
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
