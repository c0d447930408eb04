package v1alpha1

import (
	"slices"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/compliance"
)

// setProfileDefaults applies spec.security.profile's remediation
// (compliance.RemediationFor) as defaults: each flag, kubelet
// configuration field and kernel parameter the spec does not set itself.
// Nothing for no profile, an unknown one (validation refuses it) or a
// Windows spec (profiles are Linux only; validation refuses it).
func setProfileDefaults(s *MachineBootstrapSpec) {
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
		setProfileAPIServerDefaults(&cp.APIServer)
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

// profileAuditPolicy returns the audit policy a profile turns on when the
// spec gives none: request bodies never logged for Secrets, ConfigMaps and
// TokenReviews (they carry secrets), everything else at Metadata level,
// without the RequestReceived stage.
func profileAuditPolicy() map[string]any {
	return map[string]any{
		"omitStages": []any{"RequestReceived"},
		"rules": []any{
			map[string]any{"level": "Metadata", "resources": []any{
				map[string]any{"group": "", "resources": []any{"secrets", "configmaps"}},
				map[string]any{"group": "authentication.k8s.io", "resources": []any{"tokenreviews"}},
			}},
			map[string]any{"level": "Metadata"},
		},
	}
}

// setProfileAPIServerDefaults turns audit logging on (profileAuditPolicy
// to a log file with the CIS rotation) and limits anonymous requests to
// compliance.AnonymousPaths, where the spec does not configure them itself.
func setProfileAPIServerDefaults(a *APIServer) {
	// A spec that gives audit or authentication flags in extraArgs keeps
	// them: the typed field would own (and refuse) those flags.
	has := func(f func(name string) bool) bool {
		return slices.ContainsFunc(a.ExtraArgs, func(x Arg) bool { return f(x.Name) })
	}
	if a.Audit == nil && !has(func(n string) bool { return strings.HasPrefix(n, "audit-") }) {
		a.Audit = &Audit{Policy: profileAuditPolicy()}
	}
	if (a.Authentication == nil || a.Authentication.Anonymous == nil) &&
		!has(func(n string) bool { return n == "anonymous-auth" || n == "authentication-config" }) {
		if a.Authentication == nil {
			a.Authentication = &Authentication{}
		}
		an := &AnonymousAuthentication{Enabled: true}
		for _, p := range compliance.AnonymousPaths {
			an.Conditions = append(an.Conditions, AnonymousCondition{Path: p})
		}
		a.Authentication.Anonymous = an
	}
	setSecurityDefaults(a)
}
