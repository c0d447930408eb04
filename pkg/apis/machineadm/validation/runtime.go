package validation

import (
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// validateRuntime checks spec.controlPlane.runtime and binaries: the
// runtime is StaticPods or Systemd; Systemd allows no static pods (neither
// spec.host.staticPods nor a kubelet staticPodPath); binaries belong to
// Systemd only, each
// an absolute path (etcd's only with a local etcd), no two the same; a binary delivered by
// spec.host.files must come out executable by its owner.
func validateRuntime(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	cp := s.ControlPlane
	switch cp.Runtime {
	case machineadm.RuntimeStaticPods:
		if cp.Binaries != nil {
			r.Errors = append(r.Errors, field.Forbidden(p.Child("binaries"), "only with runtime Systemd"))
		}
		return
	case machineadm.RuntimeSystemd:
	default:
		r.Errors = append(r.Errors, field.NotSupported(p.Child("runtime"), cp.Runtime, []machineadm.ControlPlaneRuntime{machineadm.RuntimeStaticPods, machineadm.RuntimeSystemd}))
		return
	}
	if len(s.Host.StaticPods) > 0 {
		r.Errors = append(r.Errors, field.Forbidden(field.NewPath("spec", "host", "staticPods"), "runtime Systemd runs no static pods (the kubelet's staticPodPath is turned off)"))
	}
	if v, ok := s.Node.Kubelet.Config["staticPodPath"]; ok && v != "" {
		r.Errors = append(r.Errors, field.Forbidden(field.NewPath("spec", "node", "kubelet", "config", "staticPodPath"), "runtime Systemd turns the kubelet's staticPodPath off"))
	}
	bp := p.Child("binaries")
	if cp.Binaries == nil {
		r.Errors = append(r.Errors, field.Required(bp, "runtime Systemd needs the component binaries"))
		return
	}
	b := cp.Binaries
	if cp.Etcd.External != nil {
		if b.Etcd != "" {
			r.Errors = append(r.Errors, field.Forbidden(bp.Child("etcd"), "an external etcd runs no local etcd binary"))
		}
	} else {
		validateBinary(r, s, b.Etcd, bp.Child("etcd"))
	}
	validateBinary(r, s, b.KubeAPIServer, bp.Child("kubeAPIServer"))
	validateBinary(r, s, b.KubeControllerManager, bp.Child("kubeControllerManager"))
	validateBinary(r, s, b.KubeScheduler, bp.Child("kubeScheduler"))
	// One path for two components would run one binary as both (the
	// scheduler's unit starting kube-apiserver).
	seen := map[string]string{}
	for _, x := range []struct {
		path, name string
	}{{b.Etcd, "etcd"}, {b.KubeAPIServer, "kubeAPIServer"}, {b.KubeControllerManager, "kubeControllerManager"}, {b.KubeScheduler, "kubeScheduler"}} {
		if x.path == "" {
			continue
		}
		if other, ok := seen[x.path]; ok {
			r.Errors = append(r.Errors, field.Invalid(bp.Child(x.name), x.path, "is also "+bp.Child(other).String()+": each component needs its own binary"))
			continue
		}
		seen[x.path] = x.name
	}
}

// validateBinary checks one binary path; when spec.host.files delivers
// it, that entry must not append and its mode must let the owner execute
// it.
func validateBinary(r *Result, s *machineadm.MachineBootstrapSpec, path string, p *field.Path) {
	validateAbsFilePath(r, path, false, p)
	for i, f := range s.Host.Files {
		if f.Path != path {
			continue
		}
		fp := field.NewPath("spec", "host", "files").Index(i)
		if f.Append {
			r.Errors = append(r.Errors, field.Invalid(fp.Child("append"), true, "the file is the control-plane binary "+p.String()+" and must be written whole"))
		}
		if m, err := strconv.ParseUint(f.Mode, 8, 32); err == nil && m&0o100 == 0 {
			r.Errors = append(r.Errors, field.Invalid(fp.Child("mode"), f.Mode, "the file is the control-plane binary "+p.String()+" and must be executable by its owner, for example 0755"))
		}
	}
}
