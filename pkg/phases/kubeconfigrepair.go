package phases

import (
	"path"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/repair"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
)

// repairInterruptedKubeconfigs prepares a real run of kubeadm's kubeconfig
// phase row (init's kubeconfig/<name>, a control-plane join's
// control-plane-prepare/kubeconfig) on a control plane: when this run
// resumes in that very phase (the state file says an unfinished run of
// this spec stopped there), it removes a kubeconfig file of the phase that
// the interrupted run left empty or cut short
// (repair.RepairInterruptedKubeconfigs), which kubeadm's rerun would fail
// on or keep without credentials; kubeadm then writes it afresh. Never in a
// dry run, never when the run starts afresh or resumes elsewhere (a file
// kubeadm wrote in a phase that completed, or one an operator put there,
// stays), never a file that is whole or that the phase does not write (in
// external CA mode, without ca.key, it writes none). It returns the change
// lines for the report: "removed /etc/kubernetes/admin.conf: empty (0
// bytes), left by an interrupted earlier run of this phase; kubeadm writes
// it again". A file it cannot remove fails the phase as
// HostPreparationFailed.
func repairInterruptedKubeconfigs(d *Data, row run.Phase) ([]string, error) {
	cp := d.Config.Spec.ControlPlane
	if d.DryRun || cp == nil || d.resumedAt != row.Name {
		return nil, nil
	}
	kdir, err := d.host().Path(repair.KubeconfigDir())
	if err != nil {
		return nil, nil // kubeadm names the problem
	}
	certs, err := d.host().Path(cp.PKI.CertificatesDir)
	if err != nil {
		return nil, nil
	}
	removed, err := repair.RepairInterruptedKubeconfigs(kdir, certs, row.Name)
	var lines []string
	for _, r := range removed {
		p := path.Join(repair.KubeconfigDir(), r.File)
		d.log().Info("removed a kubeconfig an interrupted run of this phase left incomplete", "phase", row.Name, "path", p, "reason", r.Reason)
		lines = append(lines, "removed "+p+": "+r.Reason+", left by an interrupted earlier run of this phase; kubeadm writes it again")
	}
	if err != nil {
		return lines, errclass.New(errclass.HostPreparationFailed, "remove the incomplete kubeconfig file under "+repair.KubeconfigDir()+" yourself, or reset the node (kubeadm reset)", err)
	}
	return lines, nil
}
