package validation

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// osRules are the validation rules that depend on spec.os: what a spec
// for that OS may not hold, and its path syntax. Every build has both, so
// that a Linux machineadm checks a Windows spec by Windows rules.
type osRules struct {
	// validate adds the OS's own rules on the whole spec.
	validate func(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path)
	// splitVolume splits a path into its volume name and the rest in
	// slash form, the form the path checks work on.
	splitVolume func(v string) (volume, rest string)
}

// rulesByOS holds the rules of each spec.os value.
var rulesByOS = map[machineadm.OS]osRules{
	machineadm.OSLinux:   {validate: validateLinux, splitVolume: splitLinuxVolume},
	machineadm.OSWindows: {validate: validateWindows, splitVolume: splitWindowsVolume},
}

// rules returns the rules of the spec's OS; for an unknown spec.os (refused
// by validateOS) those of machineadm.DefaultOS, so that the spec's other
// problems are still reported once.
func (r *Result) rules() osRules {
	if o, ok := rulesByOS[r.targetOS()]; ok {
		return o
	}
	return rulesByOS[machineadm.DefaultOS]
}

// targetOS is the spec's OS, machineadm.DefaultOS for a Result made
// without one.
func (r *Result) targetOS() machineadm.OS {
	if r.os == "" {
		return machineadm.DefaultOS
	}
	return r.os
}

// fileKey is the file a path names, for telling two entries of one file
// apart: the path itself on Linux; on Windows, whose file names ignore
// case and drop trailing dots and spaces, the drive and each name lower
// case without them, in slash form ("C:\App\x.conf " and "c:/app/X.CONF"
// are one file).
func (r *Result) fileKey(v string) string {
	if r.targetOS() != machineadm.OSWindows {
		return v
	}
	drive, rest := machineadm.SplitWindowsPath(v)
	names := strings.Split(rest, "/")
	for i, n := range names {
		names[i] = strings.ToLower(strings.TrimRight(n, ". "))
	}
	return strings.ToLower(drive) + ":" + strings.Join(names, "/")
}

// splitVolume splits v by the path syntax of the spec's OS.
func (r *Result) splitVolume(v string) (volume, rest string) { return r.rules().splitVolume(v) }

// validateOS checks spec.os and adds the rules of the OS it names.
func validateOS(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	if _, ok := rulesByOS[s.OS]; !ok && s.OS != "" {
		r.Errors = append(r.Errors, field.NotSupported(p.Child("os"), s.OS, []machineadm.OS{machineadm.OSLinux, machineadm.OSWindows}))
		return
	}
	r.rules().validate(r, s, p)
}

// validateLinux adds the rules of spec.os linux: an offline domain join
// (djoin) and a named-pipe CRI socket are Windows-only.
func validateLinux(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	if dj := s.Host.DomainJoin; dj != nil && dj.OfflineJoinBlob != nil {
		r.Errors = append(r.Errors, field.Forbidden(p.Child("host", "domainJoin", "offlineJoinBlob"), "offline domain join (djoin) is Windows-only (spec.os windows); a Linux host joins with credentials (adcli)"))
	}
	if strings.HasPrefix(s.Node.CRISocket, "npipe:") {
		r.Errors = append(r.Errors, field.Invalid(p.Child("node", "criSocket"), s.Node.CRISocket, "a named pipe is a Windows endpoint; containerd on Linux listens on unix:///run/containerd/containerd.sock (or set spec.os: windows)"))
	}
}

// validateWindows adds the rules of spec.os windows: workers only (kubeadm
// runs no Windows control plane), a warning for a Unix CRI socket, and none
// of the Linux-only fields (domain-join linux options, sysctl, kernel
// modules).
func validateWindows(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
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

// splitLinuxVolume returns "" and v: Linux paths have no volume name.
func splitLinuxVolume(v string) (volume, rest string) { return "", v }

// splitWindowsVolume splits a drive letter off a Windows path and turns
// its backslashes into slashes (machineadm.SplitWindowsPath), so that
// "C:\ProgramData\x" is checked as the absolute path "/ProgramData/x" on
// volume "C:". A path without a drive ("/etc/kubernetes") is on the system
// drive, as kubeadm and the kubelet use it on Windows.
func splitWindowsVolume(v string) (volume, rest string) {
	drive, rest := machineadm.SplitWindowsPath(v)
	if drive != "" {
		volume = drive + ":"
	}
	return volume, rest
}
