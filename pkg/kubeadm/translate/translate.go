package translate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	kubeadmscheme "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme"
	kubeadmconfig "k8s.io/kubernetes/cmd/kubeadm/app/util/config"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/atomicfile"
)

// Inputs are the values the translation needs beyond the spec itself:
// resolved secrets and machine-local paths.
type Inputs struct {
	// JoinToken is the resolved bootstrap token for a Join
	// ("[a-z0-9]{6}.[a-z0-9]{16}").
	JoinToken string
	// CertificateKey is the resolved certificate key (64 hex characters),
	// or "".
	CertificateKey string
	// BootstrapTokens are the resolved tokens of
	// spec.controlPlane.bootstrapTokens, in order.
	BootstrapTokens []string
	// PatchesDir is the kubeadm patches directory holding the kubelet
	// configuration patch; "" when the spec has no kubelet config.
	PatchesDir string
	// CertificatesDir overrides spec.controlPlane.pki.certificatesDir (used
	// by dry runs to stage CA material outside /etc). "" keeps the spec's.
	CertificatesDir string
	// DryRun sets kubeadm's dryRun field: kubeadm writes to a temporary
	// directory and talks to a fake API server. It also turns every
	// preflight error into a warning ("all" in ignorePreflightErrors): a
	// dry run plans on machines that are not yet nodes, and the failed
	// checks are still printed.
	DryRun bool
}

// Documents is the kubeadm configuration for one machine.
type Documents struct {
	// APIVersion is the kubeadm config API version, for example
	// "kubeadm.k8s.io/v1beta4".
	APIVersion string
	// YAML holds the documents separated by "---": InitConfiguration and
	// ClusterConfiguration for Init, JoinConfiguration for Join.
	YAML []byte
}

// Translate converts a defaulted, validated hub spec into kubeadm
// configuration documents of the API version matching its Kubernetes
// version, then checks them with kubeadm's own decoding, defaulting and
// validation. Errors name the kubeadm field kubeadm rejected. A version
// outside the embedded kubeadm's skew for the role (CheckVersionSkew) is
// refused too, though kubeadm itself checks part of it only in preflight.
func Translate(cfg *machineadm.MachineBootstrapConfig, in Inputs) (*Documents, error) {
	r, err := rangeFor(cfg.Spec.Kubernetes.Version)
	if err != nil {
		return nil, err
	}
	docs, err := r.translate(cfg, in)
	if err != nil {
		return nil, err
	}
	if err := Validate(cfg.Spec.Action, docs); err != nil {
		// kubeadm's messages quote bad values, secrets included.
		return nil, errors.New(in.redact(err.Error()))
	}
	// kubeadm checks some of its version skew only in preflight, on the
	// host: refuse here what it would refuse there.
	if err := CheckVersionSkew(cfg); err != nil {
		return nil, err
	}
	return docs, nil
}

// redact replaces the secret inputs in s with "<redacted>".
func (in Inputs) redact(s string) string {
	for _, secret := range append([]string{in.JoinToken, in.CertificateKey}, in.BootstrapTokens...) {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "<redacted>")
		}
	}
	return s
}

// Validate runs kubeadm's own loading path on the documents: strict
// decoding, conversion to kubeadm's internal types, dynamic defaulting and
// ValidateInitConfiguration / ValidateJoinConfiguration. CRI detection is
// skipped (the spec always names the CRI socket).
func Validate(action machineadm.Action, docs *Documents) error {
	var err error
	if action == machineadm.ActionInit {
		_, err = kubeadmconfig.BytesToInitConfiguration(docs.YAML, true)
	} else {
		_, err = kubeadmconfig.BytesToJoinConfiguration(docs.YAML, kubeadmconfig.LoadOrDefaultConfigurationOptions{SkipCRIDetect: true})
	}
	if err != nil {
		return fmt.Errorf("kubeadm rejected the generated %s configuration: %w", docs.APIVersion, err)
	}
	return nil
}

// KubeletPatchFile is the kubeadm patch file name for the
// KubeletConfiguration: target "kubeletconfiguration", JSON merge patch.
const KubeletPatchFile = "kubeletconfiguration+merge.json"

// KubeletConfig returns the partial KubeletConfiguration machineadm
// passes to kubeadm: spec.node.kubelet.config, plus cgroupDriver from
// spec.host.containerd.cgroupDriver when the spec configures containerd and
// the kubelet config does not name a driver (the two must agree; kubeadm's
// own default is systemd), plus staticPodPath "" (no static pods) with the
// Systemd control-plane runtime. Nil when there is nothing to pass.
func KubeletConfig(cfg *machineadm.MachineBootstrapConfig) map[string]any {
	out := map[string]any{}
	for k, v := range cfg.Spec.Node.Kubelet.Config {
		out[k] = v
	}
	if cd := cfg.Spec.Host.Containerd; cd != nil && cd.CgroupDriver != "" {
		if _, set := out["cgroupDriver"]; !set {
			out["cgroupDriver"] = cd.CgroupDriver
		}
	}
	if cp := cfg.Spec.ControlPlane; cp != nil && cp.Runtime == machineadm.RuntimeSystemd {
		// The Systemd runtime runs no static pods: the kubelet watches no
		// manifest directory (R7; STIG forbids the static pod path).
		out["staticPodPath"] = ""
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// KubeletPatch returns the file name and content of the kubeadm patch that
// carries KubeletConfig(cfg), or ok=false when there is none.
func KubeletPatch(cfg *machineadm.MachineBootstrapConfig) (name string, content []byte, ok bool, err error) {
	kc := KubeletConfig(cfg)
	if kc == nil {
		return "", nil, false, nil
	}
	data, err := marshalJSON(kc)
	if err != nil {
		return "", nil, false, fmt.Errorf("encoding spec.node.kubelet.config: %w", err)
	}
	return KubeletPatchFile, data, true, nil
}

// WriteKubeletPatch writes the kubelet configuration patch into dir
// (0600) and reports whether the spec has one.
func WriteKubeletPatch(cfg *machineadm.MachineBootstrapConfig, dir string) (bool, error) {
	name, content, ok, err := KubeletPatch(cfg)
	if err != nil || !ok {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	return true, atomicfile.WriteFile(filepath.Join(dir, name), content, 0o600)
}

// nodeLabelsArg renders labels as the kubelet's --node-labels value,
// sorted by key so the output is stable.
func nodeLabelsArg(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// joinYAML joins YAML documents with "---" separators.
func joinYAML(docs ...[]byte) []byte {
	return bytes.Join(docs, []byte("---\n"))
}

// scheme is kubeadm's runtime scheme, used to marshal its types.
var scheme = kubeadmscheme.Codecs
