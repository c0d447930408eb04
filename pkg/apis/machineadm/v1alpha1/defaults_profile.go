package v1alpha1

import (
	"slices"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/compliance"
)

// setSecurityDefaults applies spec.security.profile's remediation
// (compliance.RemediationFor) as defaults: each flag, kubelet
// configuration field and kernel parameter the spec does not set itself.
// Nothing for no profile, an unknown one (validation refuses it) or a
// Windows spec (profiles are Linux only; validation refuses it).
func setSecurityDefaults(s *MachineBootstrapSpec) {
	if s.Security == nil || s.OS == OSWindows {
		return
	}
	p := compliance.Profile(s.Security.Profile)
	if !compliance.Known(p) {
		return
	}
	certsDir := DefaultCertificatesDir
	if cp := s.ControlPlane; cp != nil && cp.PKI.CertificatesDir != "" {
		certsDir = cp.PKI.CertificatesDir
	}
	r := compliance.RemediationFor(p, certsDir)
	if cp := s.ControlPlane; cp != nil && s.Role == RoleControlPlane {
		cp.APIServer.ExtraArgs = withArgs(cp.APIServer.ExtraArgs, r.APIServer)
		cp.ControllerManager.ExtraArgs = withArgs(cp.ControllerManager.ExtraArgs, r.ControllerManager)
		cp.Scheduler.ExtraArgs = withArgs(cp.Scheduler.ExtraArgs, r.Scheduler)
	}
	kubelet := r.Kubelet
	if s.Role == RoleWorker {
		for k, v := range r.WorkerKubelet {
			kubelet[k] = v
		}
	}
	if len(kubelet) > 0 && s.Node.Kubelet.Config == nil {
		s.Node.Kubelet.Config = map[string]any{}
	}
	for k, v := range kubelet {
		if _, set := s.Node.Kubelet.Config[k]; !set {
			s.Node.Kubelet.Config[k] = v
		}
	}
	if len(r.Sysctl) > 0 && s.Host.Sysctl == nil {
		s.Host.Sysctl = map[string]string{}
	}
	for k, v := range r.Sysctl {
		if _, set := s.Host.Sysctl[k]; !set {
			s.Host.Sysctl[k] = v
		}
	}
}

// withArgs returns args followed by each of defaults whose name args does
// not give.
func withArgs(args []Arg, defaults []compliance.Arg) []Arg {
	for _, d := range defaults {
		if !slices.ContainsFunc(args, func(a Arg) bool { return a.Name == d.Name }) {
			args = append(args, Arg{Name: d.Name, Value: d.Value})
		}
	}
	return args
}
