//go:build windows

package validation

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// builtinRuntime is the runtime handler machineadm's Windows containerd
// configuration always has: process-isolated Windows containers.
const builtinRuntime = "runhcs-wcow-process"

// validateOS adds the rules of the operating system machineadm is built
// for; on Windows: workers only (kubeadm runs no Windows control plane),
// a warning for a Unix CRI socket, and no Linux domain-join options.
func validateOS(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	if s.Role == machineadm.RoleControlPlane {
		r.Errors = append(r.Errors, field.Invalid(p.Child("role"), s.Role, "Windows machines can only be workers: kubeadm runs no control plane on Windows"))
	}
	if strings.HasPrefix(s.Node.CRISocket, "unix:") {
		r.warn(p.Child("node", "criSocket"), "containerd on Windows listens on a named pipe (npipe:////./pipe/containerd-containerd); kubeadm rewrites unix:// endpoints into one")
	}
	if dj := s.Host.DomainJoin; dj != nil && dj.Linux != nil {
		r.Errors = append(r.Errors, field.Forbidden(p.Child("host", "domainJoin", "linux"), "Linux-only options (adcli keytab, krb5.conf, sssd.conf); Windows keeps its machine account secret itself"))
	}
	if len(s.Host.Sysctl) > 0 {
		r.Errors = append(r.Errors, field.Forbidden(p.Child("host", "sysctl"), "kernel parameters are Linux-only"))
	}
	if len(s.Host.KernelModules) > 0 {
		r.Errors = append(r.Errors, field.Forbidden(p.Child("host", "kernelModules"), "kernel modules are Linux-only"))
	}
}

// splitVolume splits a drive letter ("C:") off a Windows path and turns
// its backslashes into slashes, so that "C:\ProgramData\x" is checked as
// the absolute path "/ProgramData/x" on volume "C:". A path without a
// drive ("/etc/kubernetes") is on the system drive, as kubeadm and the
// kubelet use it on Windows.
func splitVolume(v string) (volume, rest string) {
	if len(v) >= 2 && v[1] == ':' && (v[0]|0x20 >= 'a' && v[0]|0x20 <= 'z') {
		volume, v = v[:2], v[2:]
	}
	return volume, strings.ReplaceAll(v, `\`, "/")
}
