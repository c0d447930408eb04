package phases

import (
	"context"
	"fmt"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm"
)

// InputsCheckPhase is the name of the first bootstrap phase.
const InputsCheckPhase = "inputs-check"

// InputsCheck reads every input the kubeadm phases will need — the secret
// files of the spec and the CA set of controlPlane.pki.dir — and checks
// them, before any host phase changes anything: a missing or malformed
// token file, or a CA key that does not belong to its certificate, stops
// the run with the host untouched.
func InputsCheck() Phase {
	return Phase{
		Name:  InputsCheckPhase,
		Short: "Read and check the spec's secret files and CA set; change nothing",
		Class: errclass.PayloadUnavailable,
		Check: true,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			in, err := resolveSecrets(d)
			if err != nil {
				return Result{}, err
			}
			if err := kubeadm.CheckInputs(in); err != nil {
				return Result{}, errclass.New(errclass.PayloadUnavailable, "the secret file named by that field holds something else; write the secret alone into it", err)
			}
			d.secrets = &in
			msg := "secrets readable"
			if cp := d.Config.Spec.ControlPlane; cp != nil && cp.PKI.Dir != "" {
				dir, err := d.host().Path(cp.PKI.Dir)
				if err == nil {
					err = kubeadm.CheckCA(dir)
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
			return Result{Message: msg}, nil
		},
	}
}
