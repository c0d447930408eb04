package phases

import (
	"context"
	"fmt"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/kubeadm"
)

// InputsCheckPhase is the name of the first bootstrap phase.
const InputsCheckPhase = "inputs-check"

// InputsCheck refuses a spec for another OS than this machine's
// (host.CheckOS), then reads every input the kubeadm phases will need — it opens
// the sealed secrets that came with the spec, reads the secret files of
// the spec and the CA set of controlPlane.pki.dir — and checks
// them, before any host phase changes anything: a missing or malformed
// token file, or a CA key that does not belong to its certificate, stops
// the run with the host untouched. A secret file or CA key that group or
// others may read is a warning (secretModeWarnings), in the report's
// phase warnings and the log.
func InputsCheck() Phase {
	return Phase{
		Name:       InputsCheckPhase,
		Short:      "Read and check the spec's secret files and CA set; change nothing",
		Class:      errclass.PayloadUnavailable,
		Check:      true,
		reconverge: true,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			// A spec for another OS is refused before any of its paths
			// is read (spec.os, exit code 2).
			if err := host.CheckOS(d.Config); err != nil {
				return Result{}, err
			}
			u, err := unseal(d)
			if err != nil {
				return Result{}, err
			}
			in, err := resolveSecrets(d)
			if err != nil {
				return Result{}, err
			}
			if err := kubeadm.CheckInputs(in); err != nil {
				return Result{}, errclass.New(errclass.PayloadUnavailable, "the secret file named by that field holds something else; write the secret alone into it", err)
			}
			d.secrets = &in
			msg := "secrets readable"
			if u != nil {
				msg = fmt.Sprintf("sealed secrets opened by %s key %s (%d items)", u.By.Type, u.By.KeyID, len(u.Items))
			}
			if cp := d.Config.Spec.ControlPlane; cp != nil && cp.PKI.Dir != "" {
				var err error
				if d.sealedPKI != nil {
					err = kubeadm.CheckCASet(d.sealedPKI, time.Now())
				} else {
					var dir string
					if dir, err = d.host().Path(cp.PKI.Dir); err == nil {
						err = kubeadm.CheckCA(dir)
					}
				}
				if err != nil {
					return Result{}, errclass.New(errclass.PayloadUnavailable,
						"spec.controlPlane.pki.dir must hold the cluster's CA set from `machineadm pki init` (ca.crt with its ca.key)",
						fmt.Errorf("spec.controlPlane.pki.dir: %w", err))
				}
				msg += "; CA set in " + cp.PKI.Dir + " usable"
			}
			if err := checkSystemdBinaries(d); err != nil {
				return Result{}, err
			}
			res := Result{Message: msg}
			for _, w := range secretModeWarnings(d) {
				d.log().Warn("secret file readable by group or others", "warning", w)
				res.Warnings = append(res.Warnings, w)
				res.Changes = append(res.Changes, "warning: "+w)
			}
			return res, nil
		},
	}
}
