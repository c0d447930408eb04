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
	// DryRunDiscovery, in a join's dry run, points kubeadm's token
	// discovery at a stand-in (run.ClusterInfoStandIn): the
	// JoinConfiguration's discovery.bootstrapToken.apiServerEndpoint
	// becomes its Endpoint, and, when the stand-in's CA was made for the
	// dry run (MadeCA), its CACertHash is added to the pins, whose form
	// kubeadm still checks. Nil, or without DryRun: the spec's discovery
	// settings.
	DryRunDiscovery *DryRunDiscovery
}

// DryRunDiscovery is what Translate needs of a join dry run's stand-in
// cluster-info (run.ClusterInfoStandIn, whose fields of the same names
// these are).
type DryRunDiscovery struct {
	// Endpoint is the "127.0.0.1:port" the stand-in serves on.
	Endpoint string
	// CACertHash is the pin ("sha256:<hex>") of the CA the stand-in's
	// cluster-info carries.
	CACertHash string
	// MadeCA says the stand-in's CA was made for the dry run: the dry run
	// adds CACertHash to the pins.
	MadeCA bool
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
		// Outside every configuration API's range: the role's own range
		// says which versions it may have (the API ranges are wider).
		if serr := CheckVersionSkew(cfg); serr != nil {
			return nil, serr
		}
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

// ControllerManagerDefaultArgs are the kube-controller-manager flags
// machineadm adds to the ClusterConfiguration of a control plane it
// initialises (kubeadm's extraArgs, stored in the cluster's kubeadm-config,
// so later control-plane joins and upgrades keep them), for a fast first
// join: the controller-manager of a new cluster becomes leader and starts
// its controllers — among them the bootstrap signer that signs
// cluster-info for a join token and the CSR approver and signer of the
// kubelet's TLS bootstrap — within about a second instead of 5–8 s.
//   - kube-api-qps 200 and kube-api-burst 300 (kubeadm and the
//     controller-manager: 20 and 30): at start-up the controller-manager
//     creates one service account for each of about 45 controllers
//     (kubeadm sets --use-service-account-credentials), about 135
//     requests, which its client-side rate limit spread over ~5 s. Cost:
//     the controller-manager may send its API server up to 200 requests
//     per second, in bursts of 300 (it stays subject to the API server's
//     priority and fairness).
//   - leader-elect-retry-period 500ms (default 2s): the first attempt at
//     the lease is refused while the new API server bootstraps its RBAC;
//     the retry comes after 0.5 s instead of 2 s. Cost: in an HA control
//     plane, each standby controller-manager reads its Lease every 0.5 s
//     instead of every 2 s (a failed-over leader is taken over sooner).
//
// A flag of the same name in spec.controlPlane.controllerManager.extraArgs
// replaces the default (its value is the user's, at the user's place in
// the list). docs/design.md, "The first worker's join", has the
// measurements.
var ControllerManagerDefaultArgs = []machineadm.Arg{
	{Name: "kube-api-qps", Value: "200"},
	{Name: "kube-api-burst", Value: "300"},
	{Name: "leader-elect-retry-period", Value: "500ms"},
}

// withDefaultArgs returns defaults whose names args does not give,
// followed by args.
func withDefaultArgs(args, defaults []machineadm.Arg) []machineadm.Arg {
	out := make([]machineadm.Arg, 0, len(args)+len(defaults))
	for _, d := range defaults {
		if !slices.ContainsFunc(args, func(a machineadm.Arg) bool { return a.Name == d.Name }) {
			out = append(out, d)
		}
	}
	return append(out, args...)
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
