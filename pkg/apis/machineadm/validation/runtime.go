package validation

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
)

// validateRuntime checks spec.controlPlane.runtime and binaries: the
// runtime is StaticPods or Systemd; Systemd allows no static pods (neither
// spec.host.staticPods nor a kubelet staticPodPath); binaries belong to
// Systemd only, each
// an absolute path (etcd's only with a local etcd), no two the same; a binary delivered by
// spec.host.files must come out executable by its owner; and no path a
// unit opens itself may be in a directory its sandbox hides
// (validateSandboxPaths).
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
	validateSandboxPaths(r, s, p)
}

// sandboxHiddenDirs are the directories the Systemd runtime's units do not
// see the host's content of: PrivateTmp=yes gives each unit /tmp and
// /var/tmp of its own, and ProtectHome=yes makes /home, /root and
// /run/user empty and inaccessible (systemd.exec(5); cpunits' unit), and
// with it /var/run/user: /var/run is a symbolic link to /run, which the
// unit resolves to the emptied /run/user.
var sandboxHiddenDirs = []string{"/tmp", "/var/tmp", "/home", "/root", "/run/user", "/var/run/user"}

// privateTmpScratchFlags are the extraArgs flags naming a path the
// process creates and writes itself without a ReadWritePaths= entry
// (self-signed serving certificates, a written configuration, etcd's log
// files): under /tmp or /var/tmp it lands in the unit's private one,
// which works, so only the directories ProtectHome=yes empties are
// refused for them.
var privateTmpScratchFlags = []string{"cert-dir", "write-config-to", "log-outputs"}

// validateSandboxPaths refuses, with runtime Systemd, a host path a unit
// itself opens that its sandbox hides (sandboxHiddenDirs): a component
// binary (the unit's ExecStart), the local etcd's data directory and a
// --data-dir or --wal-dir in its extraArgs, the API server's audit log,
// a KMS plugin's socket, and a path any other extraArgs flag names unless
// it is a credential (machineadm.SystemdCredentialFlags with a clean
// path). Each would pass here and fail at bootstrap: the unit exits at
// start, a directory of its ReadWritePaths= (the data and WAL
// directories, the audit log's) missing from its private /tmp fails its
// namespace set-up (status 226/NAMESPACE), or the API server cannot reach
// its plugin. It also refuses such a path of one unit inside a directory
// another unit has to itself: etcd's data and WAL directories (0700
// etcd, and the data directory in the other units' InaccessiblePaths=)
// and the audit log's directory (0700 kube-apiserver), which the units
// cannot traverse (an audit log in the etcd data directory, the
// scheduler's binary or the etcd data directory in the audit log's
// directory). Files handed over as credentials are read by systemd
// itself, outside the sandbox, and are not checked. p is
// spec.controlPlane.
func validateSandboxPaths(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	cp := s.ControlPlane
	// use is a path unit opens itself; own is a directory unit has to
	// itself (cpunits' ReadWritePaths, created 0700 for the unit's user).
	type use struct {
		unit, value, file string
		fp                *field.Path
		// scratch: the process creates the path itself and a private
		// /tmp serves (privateTmpScratchFlags).
		scratch bool
	}
	type own struct{ unit, dir, what string }
	var uses []use
	var owns []own
	add := func(unit string, fp *field.Path, value, file string) {
		if file != "" && path.IsAbs(file) {
			uses = append(uses, use{unit: unit, value: value, file: path.Clean(file), fp: fp})
		}
	}
	if b := cp.Binaries; b != nil {
		bp := p.Child("binaries")
		add("etcd", bp.Child("etcd"), b.Etcd, b.Etcd)
		add("kube-apiserver", bp.Child("kubeAPIServer"), b.KubeAPIServer, b.KubeAPIServer)
		add("kube-controller-manager", bp.Child("kubeControllerManager"), b.KubeControllerManager, b.KubeControllerManager)
		add("kube-scheduler", bp.Child("kubeScheduler"), b.KubeScheduler, b.KubeScheduler)
	}
	if l := cp.Etcd.Local; l != nil {
		lp := p.Child("etcd", "local")
		addDir := func(fp *field.Path, dir string) {
			add("etcd", fp, dir, dir)
			if dir != "" && path.IsAbs(dir) {
				owns = append(owns, own{"etcd", path.Clean(dir), "etcd's data or WAL directory"})
			}
		}
		addDir(lp.Child("dataDir"), l.DataDir)
		for i, a := range l.ExtraArgs {
			if n := argName(a.Name); n == "data-dir" || n == "wal-dir" {
				addDir(lp.Child("extraArgs").Index(i).Child("value"), a.Value)
			}
		}
	}
	ap := p.Child("apiServer")
	if au := cp.APIServer.Audit; au != nil && au.Log != nil && au.Log.Path != "-" {
		add("kube-apiserver", ap.Child("audit", "log", "path"), au.Log.Path, au.Log.Path)
		if path.IsAbs(au.Log.Path) {
			owns = append(owns, own{"kube-apiserver", path.Dir(path.Clean(au.Log.Path)), "the audit log's directory"})
		}
	}
	if e := cp.APIServer.Encryption; e != nil {
		for i, res := range e.Resources {
			for j, pr := range res.Providers {
				if pr.KMS == nil {
					continue
				}
				if sock, ok := apiserverconfig.SocketPath(pr.KMS.Endpoint); ok {
					add("kube-apiserver", ap.Child("encryption", "resources").Index(i).Child("providers").Index(j).Child("kms", "endpoint"), pr.KMS.Endpoint, sock)
				}
			}
		}
	}
	// A file an extraArgs flag names, other than one systemd hands over
	// as a credential and the flags checked above.
	owned := apiserverconfig.OwnedFlags(&cp.APIServer)
	for _, c := range []struct {
		unit string
		args []machineadm.Arg
		p    *field.Path
	}{
		{"kube-apiserver", cp.APIServer.ExtraArgs, ap},
		{"kube-controller-manager", cp.ControllerManager.ExtraArgs, p.Child("controllerManager")},
		{"kube-scheduler", cp.Scheduler.ExtraArgs, p.Child("scheduler")},
		{"etcd", etcdArgs(cp), p.Child("etcd", "local")},
	} {
		for i, a := range c.args {
			n := argName(a.Name)
			if c.unit == "kube-apiserver" && n == "audit-log-path" && path.IsAbs(a.Value) {
				owns = append(owns, own{"kube-apiserver", path.Dir(path.Clean(a.Value)), "the audit log's directory"})
			}
			if _, ok := owned[n]; (ok && c.unit == "kube-apiserver") || (c.unit == "etcd" && (n == "data-dir" || n == "wal-dir")) ||
				(slices.Contains(machineadm.SystemdCredentialFlags[c.unit], n) && machineadm.SystemdCredentialPath(a.Value)) {
				continue
			}
			for _, v := range strings.Split(a.Value, ",") {
				if strings.HasPrefix(v, "/") {
					add(c.unit, c.p.Child("extraArgs").Index(i).Child("value"), a.Value, v)
					uses[len(uses)-1].scratch = slices.Contains(privateTmpScratchFlags, n)
				}
			}
		}
	}
	reported := map[string]bool{}
uses:
	for _, u := range uses {
		if reported[u.fp.String()] {
			continue // one error for an argument naming two files
		}
		for _, d := range sandboxHiddenDirs {
			if within(u.file, d) && !(u.scratch && (d == "/tmp" || d == "/var/tmp")) {
				r.Errors = append(r.Errors, field.Invalid(u.fp, u.value, "runtime Systemd runs the control plane's units with PrivateTmp=yes and ProtectHome=yes, which hide "+d+" from them: use a path outside "+strings.Join(sandboxHiddenDirs, ", ")))
				reported[u.fp.String()] = true
				continue uses
			}
		}
		for _, o := range owns {
			if o.unit != u.unit && within(u.file, o.dir) {
				r.Errors = append(r.Errors, field.Invalid(u.fp, u.value, "runtime Systemd gives "+o.what+" "+o.dir+" to the "+o.unit+" unit alone (mode 0700), so the "+u.unit+" unit cannot reach a path in it: use a path outside it"))
				reported[u.fp.String()] = true
				continue uses
			}
		}
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

// etcdArgs are the local etcd's extraArgs, none with an external etcd.
func etcdArgs(cp *machineadm.ControlPlane) []machineadm.Arg {
	if cp.Etcd.Local == nil {
		return nil
	}
	return cp.Etcd.Local.ExtraArgs
}
