package validation

import (
	"encoding/base64"
	"fmt"
	"path"
	"slices"
	"strings"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
)

// Names of the volumes kubeadm gives the control-plane static pods
// (cmd/kubeadm/app/phases/controlplane/volumes.go and constants); an
// extraVolumes entry of the same name would replace kubeadm's.
var kubeadmVolumeNames = []string{"k8s-certs", "ca-certs", "kubeconfig", "etcd-certs-0", "etcd-certs-1", "etcd-certs-2",
	"etc-pki-ca-trust", "etc-pki-tls-certs", "etc-ca-certificates", "usr-share-ca-certificates", "usr-local-share-ca-certificates"}

// KubeadmMounts are the host paths kubeadm mounts into each control-plane
// static pod (by component: "kube-apiserver", "kube-controller-manager",
// "kube-scheduler") of control plane cp (its certificates directory, and
// the directories of an external etcd's certificate files); the CA bundle
// directories are mounted only where they exist on the host. The kubeadm
// adapter's tests compare them with kubeadm's own pod specs
// (cmd/kubeadm/app/phases/controlplane/volumes.go).
func KubeadmMounts(component string, cp *machineadm.ControlPlane) []string {
	caDirs := []string{"/etc/ssl/certs", "/etc/pki/ca-trust", "/etc/pki/tls/certs", "/etc/ca-certificates",
		"/usr/share/ca-certificates", "/usr/local/share/ca-certificates"}
	switch component {
	case "kube-apiserver":
		out := append([]string{cp.PKI.CertificatesDir}, caDirs...)
		if x := cp.Etcd.External; x != nil {
			for _, f := range []string{x.CAFile, x.CertFile, x.KeyFile} {
				if f != "" {
					out = append(out, path.Dir(f))
				}
			}
		}
		return out
	case "kube-controller-manager":
		return append([]string{cp.PKI.CertificatesDir, "/etc/kubernetes/controller-manager.conf"}, caDirs...)
	case "kube-scheduler":
		return []string{"/etc/kubernetes/scheduler.conf"}
	}
	return nil
}

var hostPathTypes = []string{"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"}

// validateAPIServerSecurity checks the API server's typed security
// settings (spec.controlPlane.apiServer.audit, encryption, authentication,
// authorization) with the upstream types and validation, the flags they
// own in extraArgs, every component's extraVolumes, and, with static
// pods, that every path a component's extraArgs name is inside a host
// path its pod mounts. p is spec.controlPlane.
func validateAPIServerSecurity(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	cp := s.ControlPlane
	a := &cp.APIServer
	ap := p.Child("apiServer")
	owned := apiserverconfig.OwnedFlags(a)
	for i, arg := range a.ExtraArgs {
		// Any spelling of an owned flag (--audit_policy_file, …) is
		// refused with the field that owns it, not only as a bad name.
		if f, ok := owned[argName(arg.Name)]; ok {
			r.Errors = append(r.Errors, field.Forbidden(ap.Child("extraArgs").Index(i).Child("name"),
				fmt.Sprintf("--%s is set by %s: configure it there", argName(arg.Name), ap.Child(f))))
		}
	}
	if au := a.Audit; au != nil {
		validateAudit(r, au, ap.Child("audit"), cp.PKI.CertificatesDir)
	}
	if e := a.Encryption; e != nil {
		validateEncryption(r, e, ap.Child("encryption"))
	}
	if au := a.Authentication; au != nil {
		validateAuthentication(r, au, ap.Child("authentication"))
	}
	if az := a.Authorization; az != nil {
		validateAuthorization(r, az, ap.Child("authorization"))
	}
	for _, c := range []struct {
		name string
		comp *machineadm.Component
		p    *field.Path
	}{
		{"kube-apiserver", &a.Component, ap},
		{"kube-controller-manager", &cp.ControllerManager, p.Child("controllerManager")},
		{"kube-scheduler", &cp.Scheduler, p.Child("scheduler")},
	} {
		validateExtraVolumes(r, cp, c.comp, c.p)
		if cp.Runtime == machineadm.RuntimeStaticPods {
			validateMountPaths(r, c.name, cp, c.comp, p, c.p)
		}
		if cp.Runtime == machineadm.RuntimeStaticPods {
			// The component reads its flags' paths inside its pod: an
			// extraVolumes entry serves the paths below its mountPath,
			// not below its hostPath (kubeadm's and machineadm's own
			// mounts use one path on both sides).
			mounts := KubeadmMounts(c.name, cp)
			for _, v := range c.comp.ExtraVolumes {
				mounts = append(mounts, v.MountPath)
			}
			if c.name == "kube-apiserver" {
				for _, v := range apiserverconfig.Volumes(a) {
					mounts = append(mounts, v.MountPath)
				}
			}
			var owned map[string]string
			if c.name == "kube-apiserver" {
				owned = apiserverconfig.OwnedFlags(a) // refused above
			}
			validateArgPaths(r, c.comp.ExtraArgs, owned, mounts, c.p.Child("extraArgs"))
		}
	}
}

// validateArgPaths refuses a flag whose value is an absolute path (or a
// comma-separated list of them) outside every path the static pod
// mounts (mounts are paths inside the pod): the component could not read
// it and would crash-loop.
func validateArgPaths(r *Result, args []machineadm.Arg, skip map[string]string, mounts []string, p *field.Path) {
	for i, arg := range args {
		if _, ok := skip[arg.Name]; ok {
			continue
		}
		for _, v := range strings.Split(arg.Value, ",") {
			if !strings.HasPrefix(v, "/") {
				continue
			}
			if !slices.ContainsFunc(mounts, func(m string) bool { return within(path.Clean(v), m) }) {
				r.Errors = append(r.Errors, field.Invalid(p.Index(i).Child("value"), arg.Value,
					fmt.Sprintf("the static pod mounts nothing that contains %s (an extraVolumes entry serves the paths below its mountPath), so the component cannot read it: add an extraVolumes entry for it, or use the typed field that owns the flag", v)))
				break
			}
		}
	}
}

func within(p, dir string) bool {
	dir = path.Clean(dir)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// validateExtraVolumes checks one component's extraVolumes (kubeadm
// HostPathMount): only with static pods; names DNS-1123 labels, unique,
// not kubeadm's or machineadm's own; absolute clean paths; a known path
// type.
func validateExtraVolumes(r *Result, cp *machineadm.ControlPlane, c *machineadm.Component, p *field.Path) {
	vp := p.Child("extraVolumes")
	if len(c.ExtraVolumes) > 0 && cp.Runtime != machineadm.RuntimeStaticPods {
		r.Errors = append(r.Errors, field.Forbidden(vp, "only with runtime StaticPods: units read the host's files directly"))
		return
	}
	seen := map[string]bool{}
	for i, v := range c.ExtraVolumes {
		ip := vp.Index(i)
		switch {
		case v.Name == "":
			r.Errors = append(r.Errors, field.Required(ip.Child("name"), "a DNS-1123 label"))
		case len(k8svalidation.IsDNS1123Label(v.Name)) > 0:
			r.Errors = append(r.Errors, field.Invalid(ip.Child("name"), v.Name, strings.Join(k8svalidation.IsDNS1123Label(v.Name), "; ")))
		case slices.Contains(kubeadmVolumeNames, v.Name) || strings.HasPrefix(v.Name, "machineadm-"):
			r.Errors = append(r.Errors, field.Invalid(ip.Child("name"), v.Name, "a volume name kubeadm or machineadm uses; pick another"))
		case seen[v.Name]:
			r.Errors = append(r.Errors, field.Duplicate(ip.Child("name"), v.Name))
		}
		seen[v.Name] = true
		validateAbsPath(r, v.HostPath, false, ip.Child("hostPath"))
		if hostWide(v.HostPath) {
			r.Errors = append(r.Errors, field.Invalid(ip.Child("hostPath"), v.HostPath,
				"would hand the component the host itself (its root, devices, kernel interfaces or every daemon's socket, the container runtime's among them, reachable even read-only): mount the directory the files are in"))
		}
		validateAbsPath(r, v.MountPath, false, ip.Child("mountPath"))
		if !slices.Contains(hostPathTypes, v.PathType) {
			r.Errors = append(r.Errors, field.NotSupported(ip.Child("pathType"), v.PathType, hostPathTypes[1:]))
		}
	}
}

// validateMountPaths refuses a static pod whose mounts collide: two
// volumes mounted at one path make the kubelet drop the pod (its
// validation requires unique mount paths), so the component would never
// start; and an extraVolumes entry mounted inside a directory kubeadm or
// machineadm mounts would shadow the files the component needs there
// (its certificates, kubeconfig, machineadm's configuration). Checked:
// machineadm's own volumes (the audit log's and KMS sockets'
// directories) against kubeadm's, then each extraVolumes entry against
// all of them and the entries before it. p is spec.controlPlane, cp the
// component's path.
func validateMountPaths(r *Result, component string, cp *machineadm.ControlPlane, c *machineadm.Component, p, compPath *field.Path) {
	taken := map[string]string{} // mount path -> who mounts it
	for _, m := range KubeadmMounts(component, cp) {
		taken[path.Clean(m)] = "kubeadm"
	}
	if component == "kube-apiserver" {
		a := &cp.APIServer
		ap := p.Child("apiServer")
		for _, v := range apiserverconfig.Volumes(a) {
			var fp *field.Path
			switch {
			case v.Name == apiserverconfig.VolumeAuditLog:
				fp = ap.Child("audit", "log", "path")
			case strings.HasPrefix(v.Name, apiserverconfig.VolumeKMSPrefix):
				fp = ap.Child("encryption")
			}
			if fp != nil && (v.MountPath == "/" || within(v.MountPath, machineadm.APIServerConfigDir)) {
				continue // refused with the audit log's path or the KMS endpoint
			}
			if who, ok := taken[v.MountPath]; ok && fp != nil {
				r.Errors = append(r.Errors, field.Invalid(fp, v.MountPath,
					fmt.Sprintf("its directory %s is a directory %s already mounts into the API server's pod; two mounts at one path make the kubelet refuse the pod: use a directory of its own", v.MountPath, who)))
				continue
			}
			switch {
			case v.Name == apiserverconfig.VolumeAuditLog:
				taken[v.MountPath] = "machineadm (the audit log's directory)"
			case strings.HasPrefix(v.Name, apiserverconfig.VolumeKMSPrefix):
				taken[v.MountPath] = "machineadm (a KMS socket's directory)"
			default:
				taken[v.MountPath] = "machineadm"
			}
		}
	}
	owned := make([]string, 0, len(taken))
	for m := range taken {
		owned = append(owned, m)
	}
	slices.Sort(owned)
	vp := compPath.Child("extraVolumes")
	for i, v := range c.ExtraVolumes {
		if !path.IsAbs(v.MountPath) || path.Clean(v.MountPath) != v.MountPath {
			continue // refused by validateExtraVolumes
		}
		ip := vp.Index(i).Child("mountPath")
		if who, ok := taken[v.MountPath]; ok {
			r.Errors = append(r.Errors, field.Invalid(ip, v.MountPath,
				fmt.Sprintf("%s already mounts a volume at this path; two mounts at one path make the kubelet refuse the pod", who)))
			continue
		}
		if i := slices.IndexFunc(owned, func(m string) bool { return within(v.MountPath, m) }); i >= 0 {
			r.Errors = append(r.Errors, field.Invalid(ip, v.MountPath,
				fmt.Sprintf("inside %s, which %s mounts: the volume would shadow files the component needs there; mount it elsewhere", owned[i], taken[owned[i]])))
			continue
		}
		taken[v.MountPath] = fmt.Sprintf("%s[%d]", vp, i)
	}
}

// reservedDir says why dir may not hold a file the API server writes or a
// socket it reads, or "".
func reservedDir(p, certificatesDir string) string {
	switch {
	case within(p, machineadm.APIServerConfigDir):
		return "must not be in " + machineadm.APIServerConfigDir + ", which machineadm writes and mounts read-only"
	case within(p, certificatesDir):
		return "must not be in the certificates directory " + certificatesDir
	case path.Dir(p) == "/":
		return "must be in a directory of its own, not in /"
	case slices.Contains(hostSystemDirs, path.Dir(p)):
		return "must be in a directory of its own, not in " + path.Dir(p) + ": machineadm mounts the whole directory into the API server's pod, and it holds the host's other files and sockets"
	}
	return ""
}

// hostWideDirs are host paths an extraVolumes entry may not mount: each
// gives the pod the host itself rather than a component's files.
var hostWideDirs = []string{"/", "/run", "/var/run"}

// hostKernelDirs are host directories an extraVolumes entry may mount
// neither whole nor in part: /proc/1/root is the host's root, /dev/sda its
// disk, /sys/fs/cgroup every container's limits.
var hostKernelDirs = []string{"/proc", "/sys", "/dev"}

// hostDaemonSockets are the entries of /run (and /var/run, its other
// name) that hold a daemon's socket that runs anything as root: the
// container runtimes' (containerd, CRI-O, Docker, cri-dockerd), systemd's
// and the system D-Bus; and /var/lib/kubelet, which holds the kubelet's
// credentials, its plugin and pod-resources sockets and every pod's
// Secrets. An extraVolumes entry may mount neither them nor anything in
// them: refusing /run alone let /run/containerd hand the component the
// container runtime. The Cluster API CRD's CEL rule lists the same.
var hostDaemonSockets = []string{"containerd", "crio", "docker", "docker.sock", "cri-dockerd.sock", "systemd", "dbus"}

// hostKubeletDir is the kubelet's state directory (see hostDaemonSockets).
const hostKubeletDir = "/var/lib/kubelet"

// hostWide reports whether the clean absolute path p is one of
// hostWideDirs, or is or is in one of hostKernelDirs, hostDaemonSockets
// (below /run or /var/run) or hostKubeletDir.
func hostWide(p string) bool {
	if slices.Contains(hostWideDirs, p) {
		return true
	}
	in := func(d string) bool { return p == d || strings.HasPrefix(p, d+"/") }
	for _, d := range hostKernelDirs {
		if in(d) {
			return true
		}
	}
	for _, s := range hostDaemonSockets {
		if in("/run/"+s) || in("/var/run/"+s) {
			return true
		}
	}
	return in(hostKubeletDir)
}

// hostSystemDirs are host directories that hold other programs' files
// and sockets (the container runtime's, the kubelet's): an audit log or
// a KMS socket directly in one would have machineadm mount all of it
// into the API server's pod (a socket is reachable through a read-only
// mount).
var hostSystemDirs = []string{"/etc", "/run", "/var/run", "/var", "/var/lib", "/var/log", "/usr", "/usr/lib",
	"/usr/local", "/opt", "/dev", "/proc", "/sys", "/boot", "/root", "/home", "/tmp", "/bin", "/sbin", "/lib", "/lib64", "/srv", "/mnt"}

func validateAudit(r *Result, au *machineadm.Audit, p *field.Path, certificatesDir string) {
	r.Errors = append(r.Errors, apiserverconfig.ValidatePolicy(au.Policy, p.Child("policy"))...)
	if l := au.Log; l != nil {
		lp := p.Child("log")
		n := len(r.Errors)
		validateAbsFilePath(r, l.Path, false, lp.Child("path"))
		if len(r.Errors) == n {
			if msg := reservedDir(l.Path, certificatesDir); msg != "" {
				r.Errors = append(r.Errors, field.Invalid(lp.Child("path"), l.Path, msg))
			}
		}
		for _, v := range []struct {
			name string
			v    *int32
		}{{"maxAge", l.MaxAge}, {"maxSize", l.MaxSize}, {"maxBackups", l.MaxBackups}} {
			if v.v != nil && *v.v < 0 {
				r.Errors = append(r.Errors, field.Invalid(lp.Child(v.name), *v.v, "must not be negative"))
			}
		}
	}
	if w := au.Webhook; w != nil {
		wp := p.Child("webhook")
		if modes := []string{"batch", "blocking", "blocking-strict"}; !slices.Contains(modes, w.Mode) {
			r.Errors = append(r.Errors, field.NotSupported(wp.Child("mode"), w.Mode, modes))
		}
		validateKubeConfigSecret(r, &w.KubeConfig, wp.Child("kubeConfig"))
	}
}

func validateEncryption(r *Result, e *machineadm.Encryption, p *field.Path) {
	if len(e.Resources) == 0 {
		r.Errors = append(r.Errors, field.Required(p.Child("resources"), "at least one entry, for example resources [secrets] with an aescbc or kms provider"))
		return
	}
	n := len(r.Errors)
	for i, res := range e.Resources {
		for j, pr := range res.Providers {
			pp := p.Child("resources").Index(i).Child("providers").Index(j)
			for _, ks := range []struct {
				name string
				k    *machineadm.EncryptionKeys
			}{{"aesgcm", pr.AESGCM}, {"aescbc", pr.AESCBC}, {"secretbox", pr.Secretbox}} {
				if ks.k == nil {
					continue
				}
				for k := range ks.k.Keys {
					validateSecretSource(r, &ks.k.Keys[k].Secret, pp.Child(ks.name, "keys").Index(k).Child("secret"), encryptionKeyProblem)
				}
			}
			if k := pr.KMS; k != nil {
				kp := pp.Child("kms")
				if k.APIVersion != machineadm.DefaultKMSAPIVersion {
					r.Errors = append(r.Errors, field.NotSupported(kp.Child("apiVersion"), k.APIVersion, []string{machineadm.DefaultKMSAPIVersion}))
				}
				if sock, ok := apiserverconfig.SocketPath(k.Endpoint); !ok {
					r.Errors = append(r.Errors, field.Invalid(kp.Child("endpoint"), k.Endpoint, "must be unix:// and an absolute, clean socket path, for example unix:///var/run/kms/plugin.sock"))
				} else if msg := controlByteProblem(sock); msg != "" {
					r.Errors = append(r.Errors, field.Invalid(kp.Child("endpoint"), k.Endpoint, msg))
				} else if within(sock, machineadm.APIServerConfigDir) || path.Dir(sock) == "/" || slices.Contains(hostSystemDirs, path.Dir(sock)) {
					r.Errors = append(r.Errors, field.Invalid(kp.Child("endpoint"), k.Endpoint, "the socket must be in a directory of its own (mounted into the API server's pod), not in "+path.Dir(sock)+" (not in /, "+machineadm.APIServerConfigDir+" or a host system directory such as /run or /var/run, whose other sockets the pod would reach)"))
				}
			}
		}
	}
	if len(r.Errors) > n {
		return // the upstream check would repeat the same problems
	}
	r.Errors = append(r.Errors, apiserverconfig.ValidateEncryptionShape(e, p)...)
}

func validateAuthentication(r *Result, a *machineadm.Authentication, p *field.Path) {
	r.Errors = append(r.Errors, apiserverconfig.ValidateAuthentication(a, p)...)
	if w := a.Webhook; w != nil {
		wp := p.Child("webhook")
		if v := []string{"v1", "v1beta1"}; !slices.Contains(v, w.Version) {
			r.Errors = append(r.Errors, field.NotSupported(wp.Child("version"), w.Version, v))
		}
		validateDuration(r, w.CacheTTL, true, wp.Child("cacheTTL"))
		validateKubeConfigSecret(r, &w.KubeConfig, wp.Child("kubeConfig"))
	}
	if a.Webhook == nil && len(a.JWT) == 0 && a.Anonymous == nil {
		r.Errors = append(r.Errors, field.Required(p, "jwt, anonymous or webhook"))
	}
}

func validateAuthorization(r *Result, a *machineadm.Authorization, p *field.Path) {
	r.Errors = append(r.Errors, apiserverconfig.ValidateAuthorization(a, p)...)
	for _, need := range []string{"Node", "RBAC"} {
		if !slices.ContainsFunc(a.Authorizers, func(z machineadm.Authorizer) bool { return z.Type == need }) {
			r.Errors = append(r.Errors, field.Required(p.Child("authorizers"), "a "+need+" authorizer: kubeadm's nodes and bootstrap tokens need Node and RBAC"))
		}
	}
	for i, z := range a.Authorizers {
		if z.Webhook != nil {
			validateKubeConfigSecret(r, &z.Webhook.KubeConfig, p.Child("authorizers").Index(i).Child("webhook", "kubeConfig"))
		}
	}
}

// validateSecretSource checks a SecretSource: exactly one of value and
// file, a usable file path, and an inline value's shape (problem says
// what is wrong with it, or ""). Neither is ever echoed.
func validateSecretSource(r *Result, s *machineadm.SecretSource, p *field.Path, problem func(string) string) {
	switch {
	case s.Value != "" && s.File != "":
		r.Errors = append(r.Errors, field.Forbidden(p, "value and file are mutually exclusive"))
	case s.Value == "" && s.File == "":
		r.Errors = append(r.Errors, field.Required(p, "value or file"))
	case s.File != "":
		msg := r.pathProblem(s.File, true)
		if msg == "" {
			msg = r.rootDirProblem(s.File)
		}
		if msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p.Child("file"), "<redacted>", msg))
		}
	default:
		if msg := problem(strings.TrimSpace(s.Value)); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p.Child("value"), "<redacted>", msg))
		}
	}
}

func validateKubeConfigSecret(r *Result, s *machineadm.SecretSource, p *field.Path) {
	validateSecretSource(r, s, p, kubeConfigProblem)
}

// encryptionKeyProblem is SecretShapeProblem for machineadm.SecretFormatEncryptionKey.
func encryptionKeyProblem(v string) string {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || (len(b) != 16 && len(b) != 24 && len(b) != 32) {
		return "must be the base64 encoding of 16, 24 or 32 random bytes (secretbox needs 32), for example from `head -c 32 /dev/urandom | base64`"
	}
	return ""
}

// kubeConfigProblem is SecretShapeProblem for machineadm.SecretFormatKubeConfig:
// the text must load as a kubeconfig with a current context whose cluster
// has a server.
func kubeConfigProblem(v string) string {
	c, err := clientcmd.Load([]byte(v))
	if err != nil {
		return "does not load as a kubeconfig"
	}
	ctx, ok := c.Contexts[c.CurrentContext]
	if !ok {
		return "a kubeconfig without a current context"
	}
	if cl, ok := c.Clusters[ctx.Cluster]; !ok || cl.Server == "" {
		return "the kubeconfig's current context names no cluster with a server"
	}
	return ""
}
