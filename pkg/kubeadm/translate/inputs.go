package translate

import (
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Spec fields whose secrets kubeadm takes, by machineadm.SecretField.Path.
const (
	joinTokenPath       = "spec.join.token"
	certificateKeyPath  = "spec.controlPlane.certificateKey"
	bootstrapTokensPath = "spec.controlPlane.bootstrapTokens["
)

// ConsumesSecret reports whether kubeadm takes the secret of this
// SecretSource field: spec.join.token, spec.controlPlane.certificateKey or
// a spec.controlPlane.bootstrapTokens[N].token. Other SecretSource fields
// (none today) belong to other phases.
func ConsumesSecret(f machineadm.SecretField) bool {
	return f.Kind == machineadm.SecretKindSource &&
		(f.Path == joinTokenPath || f.Path == certificateKeyPath ||
			(strings.HasPrefix(f.Path, bootstrapTokensPath) && strings.HasSuffix(f.Path, "].token")))
}

// SecretInputs returns Inputs with kubeadm's secrets resolved and every
// other field zero. It calls resolve once for each SecretSource field of
// machineadm.SecretFields(cfg) that kubeadm takes (ConsumesSecret), in the
// walk's order, and stores the result: spec.join.token in JoinToken,
// spec.controlPlane.certificateKey in CertificateKey and each
// spec.controlPlane.bootstrapTokens[N].token in BootstrapTokens, in order.
// resolve decides where the value comes from — the inline value, the
// secret file, or a placeholder of the field's Format for `config kubeadm`
// and dry runs. The first error resolve returns is returned, with the
// Inputs resolved so far.
func SecretInputs(cfg *machineadm.MachineBootstrapConfig, resolve func(machineadm.SecretField) (string, error)) (Inputs, error) {
	var in Inputs
	for _, f := range machineadm.SecretFields(cfg) {
		if !ConsumesSecret(f) {
			continue
		}
		v, err := resolve(f)
		if err != nil {
			return in, err
		}
		switch f.Path {
		case joinTokenPath:
			in.JoinToken = v
		case certificateKeyPath:
			in.CertificateKey = v
		default:
			in.BootstrapTokens = append(in.BootstrapTokens, v)
		}
	}
	return in, nil
}
