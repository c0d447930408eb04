package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm"
	"github.com/machineadm/machineadm/pkg/spec"
)

// Placeholders printed instead of secrets by `config kubeadm`; they have
// the shapes kubeadm validates.
const (
	redactedToken   = "xxxxxx.xxxxxxxxxxxxxxxx"
	redactedCertKey = "0000000000000000000000000000000000000000000000000000000000000000"
)

func newConfigKubeadmCommand(o *options) *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:   "kubeadm -f SPEC",
		Short: "Print the kubeadm configuration machineadm derives from a spec (for debugging, never an input)",
		Long: `Translates the spec into the kubeadm configuration documents of the kubeadm
config API version matching spec.kubernetes.version (kubeadm.k8s.io/v1beta4
for v1.31 to v1.37; the embedded kubeadm v1.37 deploys control planes of
v1.36 and v1.37), checks them with kubeadm's own validation and prints them.
A configuration kubeadm refuses is bad input (exit code 2). Secrets are replaced by placeholders of the right shape; secret files
are not read. machineadm never takes kubeadm YAML as input.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadSpec(o, file)
			if err != nil {
				return err
			}
			docs, err := translateChecked(l.Config, file)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "# kubeadm configuration derived by machineadm (%s); secrets redacted\n", docs.APIVersion)
			_, err = o.out.Write(docs.YAML)
			return err
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "machine spec path, or - for standard input")
	return c
}

// placeholders are printed instead of secrets by `config kubeadm`, by
// machineadm.SecretField.Format; they have the shapes kubeadm validates.
var placeholders = map[string]string{
	machineadm.SecretFormatBootstrapToken: redactedToken,
	machineadm.SecretFormatCertificateKey: redactedCertKey,
}

// redactedInputs fills every secret kubeadm takes from the spec
// (kubeadm.SecretInputs over machineadm.SecretFields) with a placeholder,
// and the patches directory with machineadm's default.
func redactedInputs(cfg *machineadm.MachineBootstrapConfig) kubeadm.Inputs {
	in, _ := kubeadm.SecretInputs(cfg, func(f machineadm.SecretField) (string, error) {
		return placeholders[f.Format], nil
	})
	if kubeadm.KubeletConfig(cfg) != nil {
		in.PatchesDir = defaultWorkDir + "/patches"
	}
	return in
}

// translateChecked translates the spec with placeholder secrets and turns
// kubeadm's refusal (an unsupported Kubernetes version, a feature gate it
// does not know, ...) into an invalid-spec error: exit code 2, found
// before anything runs.
func translateChecked(cfg *machineadm.MachineBootstrapConfig, source string) (*kubeadm.Documents, error) {
	docs, err := kubeadm.Translate(cfg, redactedInputs(cfg))
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
