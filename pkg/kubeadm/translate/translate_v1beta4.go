package translate

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	bootstraptokenv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/bootstraptoken/v1"
	v1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kubeadmutil "k8s.io/kubernetes/cmd/kubeadm/app/util"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
)

// translateV1beta4 builds kubeadm.k8s.io/v1beta4 documents.
func translateV1beta4(cfg *machineadm.MachineBootstrapConfig, in Inputs) (*Documents, error) {
	s := &cfg.Spec
	nodeReg := v1beta4NodeRegistration(&s.Node)
	if in.DryRun {
		nodeReg.IgnorePreflightErrors = []string{"all"}
	}
	var patches *v1beta4.Patches
	if in.PatchesDir != "" {
		patches = &v1beta4.Patches{Directory: in.PatchesDir}
	}

	var objs []runtime.Object
	if s.Action == machineadm.ActionInit {
		cp := s.ControlPlane
		init := &v1beta4.InitConfiguration{
			TypeMeta:         metav1.TypeMeta{APIVersion: v1beta4.SchemeGroupVersion.String(), Kind: "InitConfiguration"},
			DryRun:           in.DryRun,
			NodeRegistration: nodeReg,
			LocalAPIEndpoint: v1beta4.APIEndpoint{AdvertiseAddress: cp.AdvertiseAddress, BindPort: cp.BindPort},
			CertificateKey:   in.CertificateKey,
			Patches:          patches,
		}
		for i, bt := range cp.BootstrapTokens {
			if i >= len(in.BootstrapTokens) {
				return nil, fmt.Errorf("spec.controlPlane.bootstrapTokens[%d].token: not resolved", i)
			}
			tok, err := v1beta4BootstrapToken(bt, in.BootstrapTokens[i])
			if err != nil {
				return nil, fmt.Errorf("spec.controlPlane.bootstrapTokens[%d]: %w", i, err)
			}
			init.BootstrapTokens = append(init.BootstrapTokens, tok)
		}
		objs = append(objs, init, v1beta4Cluster(cfg, in))
	} else {
		j := s.Join
		join := &v1beta4.JoinConfiguration{
			TypeMeta:         metav1.TypeMeta{APIVersion: v1beta4.SchemeGroupVersion.String(), Kind: "JoinConfiguration"},
			DryRun:           in.DryRun,
			NodeRegistration: nodeReg,
			Discovery: v1beta4.Discovery{
				BootstrapToken: &v1beta4.BootstrapTokenDiscovery{
					Token:                    in.JoinToken,
					APIServerEndpoint:        j.APIServerEndpoint,
					CACertHashes:             j.CACertHashes,
					UnsafeSkipCAVerification: j.UnsafeSkipCAVerification,
				},
				TLSBootstrapToken: in.JoinToken,
			},
			Patches: patches,
		}
		if sd := in.DryRunDiscovery; in.DryRun && sd != nil {
			bt := join.Discovery.BootstrapToken
			bt.APIServerEndpoint = sd.Endpoint
			if sd.MadeCA && len(bt.CACertHashes) > 0 {
				bt.CACertHashes = append(slices.Clone(bt.CACertHashes), sd.CACertHash)
			}
		}
		if d, err := time.ParseDuration(j.Timeout); err == nil {
			join.Timeouts = &v1beta4.Timeouts{Discovery: &metav1.Duration{Duration: d}, TLSBootstrap: &metav1.Duration{Duration: d}}
		}
		if s.Role == machineadm.RoleControlPlane {
			join.ControlPlane = &v1beta4.JoinControlPlane{
				LocalAPIEndpoint: v1beta4.APIEndpoint{AdvertiseAddress: s.ControlPlane.AdvertiseAddress, BindPort: s.ControlPlane.BindPort},
				CertificateKey:   in.CertificateKey,
			}
		}
		objs = append(objs, join)
	}

	var parts [][]byte
	for _, o := range objs {
		b, err := kubeadmutil.MarshalToYamlForCodecs(o, v1beta4.SchemeGroupVersion, scheme)
		if err != nil {
			return nil, fmt.Errorf("marshalling %T: %w", o, err)
		}
		parts = append(parts, b)
	}
	return &Documents{APIVersion: v1beta4.SchemeGroupVersion.String(), YAML: joinYAML(parts...)}, nil
}

func v1beta4Cluster(cfg *machineadm.MachineBootstrapConfig, in Inputs) *v1beta4.ClusterConfiguration {
	k := &cfg.Spec.Kubernetes
	cp := cfg.Spec.ControlPlane
	cc := &v1beta4.ClusterConfiguration{
		TypeMeta:             metav1.TypeMeta{APIVersion: v1beta4.SchemeGroupVersion.String(), Kind: "ClusterConfiguration"},
		KubernetesVersion:    k.Version,
		ClusterName:          k.ClusterName,
		ControlPlaneEndpoint: k.ControlPlaneEndpoint,
		ImageRepository:      k.ImageRepository,
		FeatureGates:         k.FeatureGates,
		Networking: v1beta4.Networking{
			PodSubnet:     k.Networking.PodSubnet,
			ServiceSubnet: k.Networking.ServiceSubnet,
			DNSDomain:     k.Networking.DNSDomain,
		},
		APIServer: v1beta4.APIServer{
			ControlPlaneComponent: v1beta4.ControlPlaneComponent{
				ExtraArgs:    v1beta4Args(APIServerArgs(&cp.APIServer)),
				ExtraVolumes: v1beta4Volumes(cp, APIServerVolumes(cp)),
			},
			CertSANs: cp.APIServer.CertSANs,
		},
		ControllerManager: v1beta4.ControlPlaneComponent{
			ExtraArgs:    v1beta4Args(withDefaultArgs(cp.ControllerManager.ExtraArgs, ControllerManagerDefaultArgs)),
			ExtraVolumes: v1beta4Volumes(cp, cp.ControllerManager.ExtraVolumes),
		},
		Scheduler: v1beta4.ControlPlaneComponent{
			ExtraArgs:    v1beta4Args(cp.Scheduler.ExtraArgs),
			ExtraVolumes: v1beta4Volumes(cp, cp.Scheduler.ExtraVolumes),
		},
		CertificatesDir:     cp.PKI.CertificatesDir,
		EncryptionAlgorithm: v1beta4.EncryptionAlgorithmType(cp.PKI.EncryptionAlgorithm),
	}
	if in.CertificatesDir != "" {
		cc.CertificatesDir = in.CertificatesDir
	}
	if l := cp.Etcd.Local; l != nil {
		cc.Etcd.Local = &v1beta4.LocalEtcd{
			DataDir:        l.DataDir,
			ExtraArgs:      v1beta4Args(l.ExtraArgs),
			ServerCertSANs: l.ServerCertSANs,
			PeerCertSANs:   l.PeerCertSANs,
		}
	}
	if x := cp.Etcd.External; x != nil {
		cc.Etcd.External = &v1beta4.ExternalEtcd{Endpoints: x.Endpoints, CAFile: x.CAFile, CertFile: x.CertFile, KeyFile: x.KeyFile}
	}
	return cc
}

func v1beta4NodeRegistration(n *machineadm.Node) v1beta4.NodeRegistrationOptions {
	nr := v1beta4.NodeRegistrationOptions{
		Name:                  n.Name,
		CRISocket:             n.CRISocket,
		IgnorePreflightErrors: n.IgnorePreflightErrors,
		// Images are expected on the node (air-gapped sites import them);
		// kubeadm pulls only what is missing.
		ImagePullPolicy: corev1.PullIfNotPresent,
	}
	if n.Taints != nil {
		nr.Taints = []corev1.Taint{}
		for _, t := range *n.Taints {
			nr.Taints = append(nr.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
		}
	}
	if len(n.Labels) > 0 {
		nr.KubeletExtraArgs = append(nr.KubeletExtraArgs, v1beta4.Arg{Name: "node-labels", Value: nodeLabelsArg(n.Labels)})
	}
	nr.KubeletExtraArgs = append(nr.KubeletExtraArgs, v1beta4Args(n.Kubelet.ExtraArgs)...)
	return nr
}

func v1beta4BootstrapToken(bt machineadm.BootstrapToken, token string) (bootstraptokenv1.BootstrapToken, error) {
	ts, err := bootstraptokenv1.NewBootstrapTokenString(token)
	if err != nil {
		// Never echo the token.
		return bootstraptokenv1.BootstrapToken{}, fmt.Errorf("token: not a valid bootstrap token")
	}
	ttl, err := time.ParseDuration(bt.TTL)
	if err != nil {
		return bootstraptokenv1.BootstrapToken{}, fmt.Errorf("ttl: %w", err)
	}
	return bootstraptokenv1.BootstrapToken{
		Token:       ts,
		Description: bt.Description,
		TTL:         &metav1.Duration{Duration: ttl},
		Groups:      bt.Groups,
		Usages:      bt.Usages,
	}, nil
}

func v1beta4Args(args []machineadm.Arg) []v1beta4.Arg {
	if len(args) == 0 {
		return nil
	}
	out := make([]v1beta4.Arg, 0, len(args))
	for _, a := range args {
		out = append(out, v1beta4.Arg{Name: a.Name, Value: a.Value})
	}
	return out
}

// APIServerArgs are the API server's extraArgs: the spec's, then the
// flags of its typed security settings (apiserverconfig.Flags; validation
// refuses an extraArgs entry of the same name).
func APIServerArgs(a *machineadm.APIServer) []machineadm.Arg {
	return append(slices.Clone(a.ExtraArgs), apiserverconfig.Flags(a)...)
}

// APIServerVolumes are the API server pod's extraVolumes with static
// pods: the spec's, then the host paths of its typed security settings
// (apiserverconfig.Volumes: the configuration directory and KMS socket
// directories read-only, the audit log directory read-write).
func APIServerVolumes(cp *machineadm.ControlPlane) []machineadm.HostPathMount {
	return append(slices.Clone(cp.APIServer.ExtraVolumes), apiserverconfig.Volumes(&cp.APIServer)...)
}

// v1beta4Volumes are kubeadm's extraVolumes of vols; none with the
// Systemd runtime, whose units read the host's files directly.
func v1beta4Volumes(cp *machineadm.ControlPlane, vols []machineadm.HostPathMount) []v1beta4.HostPathMount {
	if cp.Runtime == machineadm.RuntimeSystemd || len(vols) == 0 {
		return nil
	}
	out := make([]v1beta4.HostPathMount, 0, len(vols))
	for _, v := range vols {
		out = append(out, v1beta4.HostPathMount{Name: v.Name, HostPath: v.HostPath, MountPath: v.MountPath,
			ReadOnly: v.ReadOnly, PathType: corev1.HostPathType(v.PathType)})
	}
	return out
}

func marshalJSON(v any) ([]byte, error) { return json.Marshal(v) }
