package translate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	componentversion "k8s.io/component-base/version"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// VersionRange is the range of spec.kubernetes.version that the embedded
// kubeadm accepts for one role and action.
type VersionRange struct {
	// Min is the lowest version accepted, "v1.36.0".
	Min string
	// Below is the first version no longer accepted, "v1.38.0-0": kubeadm
	// refuses a Kubernetes version newer than its own minor release.
	Below string
	// Source names the kubeadm rule behind Min.
	Source string
}

// SupportedVersions returns the versions the embedded kubeadm accepts for
// role and action, from kubeadm's own constants, which derive from its
// version (k8s.io/component-base/version, stamped by the build):
//
//   - a control plane (init, or join with role ControlPlane) needs at
//     least constants.MinimumControlPlaneVersion (kubeadm's minor - 1;
//     kubeadm's config defaulting refuses lower);
//   - a worker join needs a kubelet of at least
//     constants.MinimumKubeletVersion (kubeadm's minor - 3; the
//     KubeletVersion preflight check refuses lower) — machineadm runs the
//     kubelet of spec.kubernetes.version;
//   - neither may be newer than kubeadm's own minor release (the
//     KubernetesVersion preflight check).
//
// ok is false for an unstamped build, whose kubeadm does not know its
// version (its constants are placeholders); nothing can be derived then.
func SupportedVersions(role machineadm.Role) (r VersionRange, ok bool) {
	info := componentversion.Get()
	if info.Major == "" {
		return r, false
	}
	kv, err := version.ParseSemantic(info.GitVersion)
	if err != nil {
		return r, false
	}
	r.Below = fmt.Sprintf("v%d.%d.0-0", kv.Major(), kv.Minor()+1)
	if role == machineadm.RoleWorker {
		r.Min, r.Source = "v"+kubeadmconstants.MinimumKubeletVersion.String(), "kubeadm's MinimumKubeletVersion, checked by its KubeletVersion preflight check"
	} else {
		r.Min, r.Source = "v"+kubeadmconstants.MinimumControlPlaneVersion.String(), "kubeadm's MinimumControlPlaneVersion"
	}
	return r, true
}

// CheckVersionSkew reports a spec.kubernetes.version outside
// SupportedVersions for the spec's role and action, in an error that
// quotes the version, names the embedded kubeadm and the supported range.
// An unstamped build or an unparsable version gives nil: the first cannot
// tell, the second is validation's to report. Translate calls it first.
func CheckVersionSkew(cfg *machineadm.MachineBootstrapConfig) error {
	s := &cfg.Spec
	r, ok := SupportedVersions(s.Role)
	if !ok {
		return nil
	}
	v, err := version.ParseSemantic(s.Kubernetes.Version)
	if err != nil {
		return nil
	}
	what := "a control plane (" + string(s.Action) + ")"
	if s.Role == machineadm.RoleWorker {
		what = "a worker join"
	}
	below := version.MustParseSemantic(r.Below)
	switch {
	case v.LessThan(version.MustParseSemantic(r.Min)):
		return fmt.Errorf("spec.kubernetes.version %s is too old for %s with the embedded kubeadm %s: it needs at least %s (%s)",
			s.Kubernetes.Version, what, componentversion.Get().GitVersion, r.Min, r.Source)
	case v.AtLeast(below):
		return fmt.Errorf("spec.kubernetes.version %s is newer than the embedded kubeadm %s: %s needs a version below v%d.%d.0 (kubeadm's KubernetesVersion preflight check)",
			s.Kubernetes.Version, componentversion.Get().GitVersion, what, below.Major(), below.Minor())
	}
	return nil
}

// KubeletKubeconfigPath is where the kubelet's kubeconfig appears once its
// TLS bootstrap is done: kubeadm's constants.GetKubeletKubeConfigPath
// (/etc/kubernetes/kubelet.conf on Linux), a machine path.
func KubeletKubeconfigPath() string { return kubeadmconstants.GetKubeletKubeConfigPath() }
