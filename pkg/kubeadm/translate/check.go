package translate

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/spec"
)

// DefaultWorkDir is machineadm's state directory on a host: the state
// file, the kubeadm configuration and its patches directory.
const DefaultWorkDir = "/var/lib/machineadm"

// Placeholders printed instead of secrets by `config kubeadm`; they have
// the shapes kubeadm validates.
const (
	redactedToken   = "xxxxxx.xxxxxxxxxxxxxxxx"
	redactedCertKey = "0000000000000000000000000000000000000000000000000000000000000000"
)

// placeholders are used instead of secrets by CheckSpec and `config
// kubeadm`, by machineadm.SecretField.Format; they have the shapes kubeadm
// validates.
var placeholders = map[string]string{
	machineadm.SecretFormatBootstrapToken: redactedToken,
	machineadm.SecretFormatCertificateKey: redactedCertKey,
}

// redactedInputs fills every secret kubeadm takes from the spec
// (SecretInputs over machineadm.SecretFields) with a placeholder, and the
// patches directory with machineadm's default.
func redactedInputs(cfg *machineadm.MachineBootstrapConfig) Inputs {
	in := PlaceholderInputs(cfg)
	if KubeletConfig(cfg) != nil {
		in.PatchesDir = DefaultWorkDir + "/patches"
	}
	return in
}

// PlaceholderInputs are the Inputs of cfg with a placeholder for every
// secret kubeadm takes (no secret file is read) and every other field
// zero: for what needs the kubeadm documents but none of those secrets
// (an upgrade's units).
func PlaceholderInputs(cfg *machineadm.MachineBootstrapConfig) Inputs {
	in, _ := SecretInputs(cfg, func(f machineadm.SecretField) (string, error) {
		return placeholders[f.Format], nil
	})
	return in
}

// CheckSpec translates the spec with placeholder secrets (secret files are
// not read) and turns kubeadm's refusal (an unsupported Kubernetes
// version, a feature gate it does not know, ...) into a
// *spec.InvalidSpecError naming the spec field: exit code 2, found before
// anything runs. source names the spec in the error. The documents it
// returns carry the placeholders, for `machineadm config kubeadm`.
func CheckSpec(cfg *machineadm.MachineBootstrapConfig, source string) (*Documents, error) {
	docs, err := Translate(cfg, redactedInputs(cfg))
	if err != nil {
		return nil, &spec.InvalidSpecError{Source: source, Errors: field.ErrorList{
			&field.Error{Type: field.ErrorTypeInvalid, Field: kubeadmErrorField(cfg, err.Error()), BadValue: field.OmitValueType{}, Detail: err.Error()}}}
	}
	return docs, nil
}

// kubeadmFieldPaths maps kubeadm configuration fields, as kubeadm's
// validation names them, to the spec fields they come from.
var kubeadmFieldPaths = []struct{ kubeadm, spec string }{
	{"featureGates", "spec.kubernetes.featureGates"},
	{"controlPlaneEndpoint", "spec.kubernetes.controlPlaneEndpoint"},
	{"imageRepository", "spec.kubernetes.imageRepository"},
	{"podSubnet", "spec.kubernetes.networking.podSubnet"},
	{"serviceSubnet", "spec.kubernetes.networking.serviceSubnet"},
	{"dnsDomain", "spec.kubernetes.networking.dnsDomain"},
	{"certSANs", "spec.controlPlane.apiServer.certSANs"},
	{"advertiseAddress", "spec.controlPlane.advertiseAddress"},
	{"bindPort", "spec.controlPlane.bindPort"},
	{"caCertHashes", "spec.join.caCertHashes"},
	{"apiServerEndpoint", "spec.join.apiServerEndpoint"},
	{"nodeRegistration.name", "spec.node.name"},
	{"kubeletExtraArgs", "spec.node.kubelet.extraArgs"},
	{"taints", "spec.node.taints"},
	{"etcd", "spec.controlPlane.etcd"},
	{"kubernetesVersion", "spec.kubernetes.version"},
}

// kubeadmErrorField names the spec field kubeadm's message is about: the
// first kubeadm field it mentions, or spec.kubernetes.version when it
// quotes the spec's version (kubeadm's skew check names no field), else
// "spec".
func kubeadmErrorField(cfg *machineadm.MachineBootstrapConfig, msg string) string {
	for _, m := range kubeadmFieldPaths {
		if strings.Contains(msg, m.kubeadm) {
			return m.spec
		}
	}
	if v := cfg.Spec.Kubernetes.Version; v != "" && strings.Contains(msg, v) {
		return "spec.kubernetes.version"
	}
	return "spec"
}
