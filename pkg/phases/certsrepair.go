package phases

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/repair"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
)

// repairInterruptedCerts prepares a real run of kubeadm's certificate
// phase row (init's certs/<name>, join's control-plane-prepare/certs) on a
// control plane: it removes a private key that an interrupted earlier run
// left without its certificate (repair.RepairInterruptedCerts), which
// kubeadm's rerun would fail on. A key of the shared set (a CA key,
// sa.key) is removed only when this run resumes in that very phase, the
// one that writes it (the state file says an unfinished run of this spec
// stopped there), and the key was not delivered with the CA set
// (spec.controlPlane.pki.dir or a sealed spec): so a CA key kubeadm was
// generating goes, and one an operator delivered, or one with its
// certificate, never does. It returns the change lines for the report.
func repairInterruptedCerts(d *Data, row run.Phase) ([]string, error) {
	cp := d.Config.Spec.ControlPlane
	if d.DryRun || cp == nil {
		return nil, nil
	}
	dir, err := d.host().Path(cp.PKI.CertificatesDir)
	if err != nil {
		return nil, nil // kubeadm names the problem
	}
	removed, err := repair.RepairInterruptedCerts(dir, row.Name, func(key string) bool {
		return d.resumedAt == row.Name && !deliveredPKI(d, key)
	})
	var lines []string
	for _, f := range removed {
		p := path.Join(cp.PKI.CertificatesDir, filepath.ToSlash(f))
		d.log().Info("removed a file an interrupted run of this phase left incomplete", "phase", row.Name, "path", p)
		lines = append(lines, "removed "+p+": left incomplete (a key without its certificate) by an interrupted earlier run; kubeadm writes it again")
	}
	if err != nil {
		return lines, errclass.New(errclass.HostPreparationFailed, "remove the incomplete key pair yourself, or reset the node (kubeadm reset)", err)
	}
	return lines, nil
}

// deliveredPKI says whether the CA set delivered to this machine (a sealed
// spec's, or spec.controlPlane.pki.dir) holds the file name (relative to
// it, "etcd/ca.key"). When it cannot tell, it says yes. Call it after
// prepareKubeadm, which opens a sealed spec's set.
func deliveredPKI(d *Data, name string) bool {
	if d.sealedPKI != nil {
		_, ok := d.sealedPKI[name]
		return ok
	}
	if d.Sealed != nil {
		return true // a sealed set not opened (yet)
	}
	cp := d.Config.Spec.ControlPlane
	if cp == nil || cp.PKI.Dir == "" {
		return false
	}
	hp, err := d.host().Path(path.Join(cp.PKI.Dir, name))
	if err != nil {
		return true
	}
	_, err = os.Lstat(hp)
	return !errors.Is(err, fs.ErrNotExist)
}
