// Package validation checks a defaulted hub machine spec and reports every
// problem at once, each with its field path (for example
// "spec.join.caCertHashes[0]: Invalid value: …"), with warnings kept apart
// from errors. It never touches the host.
package validation

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Warning is a problem that does not stop the bootstrap, with its field
// path.
type Warning struct {
	// Field is the path of the field, for example "spec.join.token.value".
	Field string
	// Message says what is risky and what to do instead.
	Message string
}

// String formats the warning as "path: message".
func (w Warning) String() string { return w.Field + ": " + w.Message }

// Result is the outcome of validating one spec.
type Result struct {
	// Errors are the problems that make the spec invalid, each with its
	// field path. Empty when the spec is valid.
	Errors field.ErrorList
	// Warnings are problems that do not make the spec invalid.
	Warnings []Warning

	// os is the spec's OS (machineadm.OSOf): it selects the OS rules and
	// the path syntax (osRules).
	os machineadm.OS
}

func (r *Result) warn(p *field.Path, format string, args ...any) {
	r.Warnings = append(r.Warnings, Warning{Field: p.String(), Message: fmt.Sprintf(format, args...)})
}

// MaxRenewBefore bounds spec.controlPlane.pki.renewBefore (exclusive):
// the lifetime of the certificates kubeadm issues (its
// CertificateValidityPeriod, 8760h). A window as long as that covers
// every certificate, which each upgrade run would renew again.
const MaxRenewBefore = 365 * 24 * time.Hour

var (
	versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?$`) })
	tokenRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`) })
	caHashRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })
	certKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
	sha256RE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
	argNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`) })
	// A module name never starts with "-": modprobe and every other tool
	// that takes it would read it as an option.
	moduleRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`) })
	// sysctl.d(5) dotted keys; "/" inside a component stands for a dot in
	// it (an interface name such as eth0.100: net.ipv4.conf.eth0/100.rp_filter)
	// and "*" is a glob.
	sysctlKeyRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9_][a-z0-9_-]*(\.[A-Za-z0-9_*-]+(/[A-Za-z0-9_*-]+)*)*$`)
	})
	ownerRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+|[a-z_][a-z0-9_-]*\$?)$`) })
	podNameRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) })
	fileModeRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^0?[0-7]{3}$`) })
	encryptAlgos = []string{"ECDSA-P256", "ECDSA-P384", "RSA-2048", "RSA-3072", "RSA-4096"}
)

// Validate checks a defaulted hub spec. It reports every error it finds,
// not only the first.
func Validate(c *machineadm.MachineBootstrapConfig) Result {
	s := &c.Spec
	r := Result{os: machineadm.OSOf(s)}
	p := field.NewPath("spec")

	switch s.Role {
	case machineadm.RoleControlPlane, machineadm.RoleWorker:
	case "":
		r.Errors = append(r.Errors, field.Required(p.Child("role"), "ControlPlane or Worker"))
	default:
		r.Errors = append(r.Errors, field.NotSupported(p.Child("role"), s.Role, []machineadm.Role{machineadm.RoleControlPlane, machineadm.RoleWorker}))
	}
	switch s.Action {
	case machineadm.ActionInit:
		if s.Role == machineadm.RoleWorker {
			r.Errors = append(r.Errors, field.Invalid(p.Child("action"), s.Action, "Init creates a cluster and needs role ControlPlane"))
		}
		if s.Join != nil {
			r.Errors = append(r.Errors, field.Forbidden(p.Child("join"), "must be empty for action Init"))
		}
	case machineadm.ActionJoin:
		// With an unknown role the defaulted action may not be what the
		// author meant: report the role alone.
		roleKnown := s.Role == machineadm.RoleControlPlane || s.Role == machineadm.RoleWorker
		if s.Join == nil && roleKnown {
			r.Errors = append(r.Errors, field.Required(p.Child("join"), "action Join needs apiServerEndpoint, token and caCertHashes"))
		}
	default:
		r.Errors = append(r.Errors, field.NotSupported(p.Child("action"), s.Action, []machineadm.Action{machineadm.ActionInit, machineadm.ActionJoin}))
	}
	if s.Role == machineadm.RoleWorker && s.ControlPlane != nil {
		r.Errors = append(r.Errors, field.Forbidden(p.Child("controlPlane"), "must be empty for role Worker"))
	}

	validateKubernetes(&r, &s.Kubernetes, p.Child("kubernetes"))
	// A worker's controlPlane section is already refused as a whole; its
	// fields (never defaulted for workers) would only add noise.
	if s.ControlPlane != nil && s.Role != machineadm.RoleWorker {
		validateControlPlane(&r, s, p.Child("controlPlane"))
	}
	if s.Join != nil {
		validateJoin(&r, s.Join, p.Child("join"))
	}
	validateNode(&r, &s.Node, s.Action == machineadm.ActionJoin, p.Child("node"))
	validateHost(&r, s, p.Child("host"))
	validateHostPrep(&r, s, p.Child("host"))
	if s.Host.DomainJoin != nil {
		validateDomainJoin(&r, s.Host.DomainJoin, p.Child("host", "domainJoin"))
	}
	validateOS(&r, s, p)
	validateReport(&r, &s.Report, p.Child("report"))
	validateSecurity(&r, s, p.Child("security"))
	validateStaticPodPathOff(&r, s)
	warnInlineSecrets(&r, c)
	validateRanges(&r, c)
	redactSecretValues(&r)
	return r
}

// redactSecretValues replaces the value an error quotes with "<redacted>"
// when it has a secret's shape (SecretInText: a bootstrap token pasted
// into apiServerEndpoint, a private key into a name): the error still
// names the field and says what is wrong, and the console, the report and
// the logs never show the secret.
func redactSecretValues(r *Result) {
	for _, e := range r.Errors {
		if e.BadValue == nil {
			continue
		}
		if SecretInText([]byte(fmt.Sprint(e.BadValue))) != "" {
			e.BadValue = "<redacted>"
		}
	}
}

// ParseVersion splits "vMAJOR.MINOR.PATCH[-pre]" into its numbers. It
// returns an error for any other shape, and for a version that is not
// strict semantic versioning (k8s.io/apimachinery's
// version.ParseSemantic): a number with a leading zero ("v1.037.2"), an
// empty or zero-prefixed numeric pre-release identifier. kubeadm parses a
// control plane's version that way and refused those while a worker,
// whose version kubeadm never parses, took them; this is the one check
// for every role.
func ParseVersion(v string) (major, minor, patch int, err error) {
	m := versionRE().FindStringSubmatch(v)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("%q is not a version of the form vMAJOR.MINOR.PATCH", v)
	}
	if _, err := version.ParseSemantic(v); err != nil {
		return 0, 0, 0, fmt.Errorf("%q is not a semantic version vMAJOR.MINOR.PATCH (no leading zeros; a pre-release of non-empty dot-separated identifiers): %v", v, err)
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	patch, _ = strconv.Atoi(m[3])
	return major, minor, patch, nil
}

func validateKubernetes(r *Result, k *machineadm.Kubernetes, p *field.Path) {
	if k.Version == "" {
		r.Errors = append(r.Errors, field.Required(p.Child("version"), "an explicit Kubernetes version such as v1.37.2; machineadm never looks it up online"))
	} else if _, _, _, err := ParseVersion(k.Version); err != nil {
		r.Errors = append(r.Errors, field.Invalid(p.Child("version"), k.Version, err.Error()))
	}
	if k.ControlPlaneEndpoint != "" {
		validateEndpoint(r, k.ControlPlaneEndpoint, false, p.Child("controlPlaneEndpoint"))
	}
	if k.ImageRepository != "" {
		if msg := imageRepositoryProblem(k.ImageRepository); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p.Child("imageRepository"), k.ImageRepository, msg))
		}
	}
	if k.ClusterName != "" {
		if msg := dns1123Subdomain(k.ClusterName); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p.Child("clusterName"), k.ClusterName, msg))
		}
	}
	n := p.Child("networking")
	validateCIDRs(r, k.Networking.PodSubnet, n.Child("podSubnet"))
	validateCIDRs(r, k.Networking.ServiceSubnet, n.Child("serviceSubnet"))
	if msg := dns1123Subdomain(k.Networking.DNSDomain); msg != "" {
		r.Errors = append(r.Errors, field.Invalid(n.Child("dnsDomain"), k.Networking.DNSDomain, msg))
	}
}

func validateControlPlane(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	cp := s.ControlPlane
	if cp.AdvertiseAddress != "" {
		if msg := advertiseAddressProblem(cp.AdvertiseAddress); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p.Child("advertiseAddress"), cp.AdvertiseAddress, msg))
		}
	}
	if cp.BindPort < 1 || cp.BindPort > 65535 {
		r.Errors = append(r.Errors, field.Invalid(p.Child("bindPort"), cp.BindPort, "must be between 1 and 65535"))
	}
	validateArgs(r, cp.APIServer.ExtraArgs, p.Child("apiServer", "extraArgs"))
	validateArgs(r, cp.ControllerManager.ExtraArgs, p.Child("controllerManager", "extraArgs"))
	validateArgs(r, cp.Scheduler.ExtraArgs, p.Child("scheduler", "extraArgs"))
	for i, san := range cp.APIServer.CertSANs {
		validateSAN(r, san, p.Child("apiServer", "certSANs").Index(i))
	}
	validateEtcd(r, &cp.Etcd, p.Child("etcd"))
	validateAPIServerSecurity(r, s, p)
	validateAbsPath(r, cp.PKI.Dir, true, p.Child("pki", "dir"))
	validateAbsPath(r, cp.PKI.CertificatesDir, false, p.Child("pki", "certificatesDir"))
	if !contains(encryptAlgos, cp.PKI.EncryptionAlgorithm) {
		r.Errors = append(r.Errors, field.NotSupported(p.Child("pki", "encryptionAlgorithm"), cp.PKI.EncryptionAlgorithm, encryptAlgos))
	}
	if w := cp.PKI.RenewBefore; w != "" {
		if d, err := time.ParseDuration(w); err != nil || d < 0 {
			r.Errors = append(r.Errors, field.Invalid(p.Child("pki", "renewBefore"), w, "must be a duration of at least 0, such as 720h"))
		} else if d >= MaxRenewBefore {
			r.Errors = append(r.Errors, field.Invalid(p.Child("pki", "renewBefore"), w, "must be shorter than the certificates' lifetime, "+MaxRenewBefore.String()+" (kubeadm's one year): a longer window renews every certificate at every upgrade run"))
		}
	}
	if cp.CertificateKey != nil {
		validateSecret(r, cp.CertificateKey, certKeyRE(), "64 lower-case hex characters (a 32-byte AES key)", p.Child("certificateKey"))
	}
	if s.Action == machineadm.ActionJoin {
		if cp.CertificateKey == nil && cp.PKI.Dir == "" {
			r.Errors = append(r.Errors, field.Required(p.Child("certificateKey"), "a control-plane Join needs the shared certificates: a certificateKey (download from the kubeadm-certs Secret) or pki.dir"))
		}
		if len(cp.BootstrapTokens) > 0 {
			r.Errors = append(r.Errors, field.Forbidden(p.Child("bootstrapTokens"), "bootstrap tokens are created on Init only"))
		}
	}
	if s.Action == machineadm.ActionInit && s.Kubernetes.ControlPlaneEndpoint == "" {
		r.warn(field.NewPath("spec", "kubernetes", "controlPlaneEndpoint"), "not set: more control-plane nodes can never join this cluster; set a stable endpoint (load balancer or DNS name)")
	}
	for i := range cp.BootstrapTokens {
		t := &cp.BootstrapTokens[i]
		tp := p.Child("bootstrapTokens").Index(i)
		validateSecret(r, &t.Token, tokenRE(), "[a-z0-9]{6}.[a-z0-9]{16}", tp.Child("token"))
		validateDuration(r, t.TTL, true, tp.Child("ttl"))
		for j, g := range t.Groups {
			if err := bootstraputil.ValidateBootstrapGroupName(g); err != nil {
				r.Errors = append(r.Errors, field.Invalid(tp.Child("groups").Index(j), g, "must match "+bootstrapapi.BootstrapGroupPattern))
			}
		}
		for j, u := range t.Usages {
			if !contains(bootstrapapi.KnownTokenUsages, u) {
				r.Errors = append(r.Errors, field.NotSupported(tp.Child("usages").Index(j), u, bootstrapapi.KnownTokenUsages))
			}
		}
	}
	validateRuntime(r, s, p)
}

func validateEtcd(r *Result, e *machineadm.Etcd, p *field.Path) {
	if e.Local != nil && e.External != nil {
		r.Errors = append(r.Errors, field.Forbidden(p, "local and external are mutually exclusive"))
	}
	if l := e.Local; l != nil {
		validateAbsPath(r, l.DataDir, false, p.Child("local", "dataDir"))
		validateArgs(r, l.ExtraArgs, p.Child("local", "extraArgs"))
		for i, san := range l.ServerCertSANs {
			validateSAN(r, san, p.Child("local", "serverCertSANs").Index(i))
		}
		for i, san := range l.PeerCertSANs {
			validateSAN(r, san, p.Child("local", "peerCertSANs").Index(i))
		}
	}
	if x := e.External; x != nil {
		ep := p.Child("external")
		if len(x.Endpoints) == 0 {
			r.Errors = append(r.Errors, field.Required(ep.Child("endpoints"), "at least one etcd client URL"))
		}
		// As kubeadm: the TLS files come as a set, and with them every
		// endpoint must be https.
		withTLS := x.CAFile != "" || x.CertFile != "" || x.KeyFile != ""
		schemes := []string{"http", "https"}
		if withTLS {
			schemes = []string{"https"}
		}
		for i, u := range x.Endpoints {
			if strings.Contains(u, ",") {
				// kube-apiserver's --etcd-servers joins the endpoints
				// with commas: this one would be several, unchecked.
				r.Errors = append(r.Errors, field.Invalid(ep.Child("endpoints").Index(i), u, "must be one URL without commas: give each etcd member as its own endpoint"))
				continue
			}
			validateURL(r, u, schemes, ep.Child("endpoints").Index(i))
		}
		validateAbsFilePath(r, x.CAFile, !withTLS, ep.Child("caFile"))
		validateAbsFilePath(r, x.CertFile, !withTLS, ep.Child("certFile"))
		validateAbsFilePath(r, x.KeyFile, !withTLS, ep.Child("keyFile"))
	}
}

func validateJoin(r *Result, j *machineadm.Join, p *field.Path) {
	if j.APIServerEndpoint == "" {
		r.Errors = append(r.Errors, field.Required(p.Child("apiServerEndpoint"), "host:port of the control-plane endpoint"))
	} else {
		validateEndpoint(r, j.APIServerEndpoint, true, p.Child("apiServerEndpoint"))
	}
	validateSecret(r, &j.Token, tokenRE(), "[a-z0-9]{6}.[a-z0-9]{16}", p.Child("token"))
	if len(j.CACertHashes) == 0 && !j.UnsafeSkipCAVerification {
		r.Errors = append(r.Errors, field.Required(p.Child("caCertHashes"), "pin the cluster CA with its sha256: hash (printed by `machineadm pki init`), or set unsafeSkipCAVerification"))
	}
	for i, h := range j.CACertHashes {
		if !caHashRE().MatchString(h) {
			r.Errors = append(r.Errors, field.Invalid(p.Child("caCertHashes").Index(i), h, "must be sha256: followed by 64 lower-case hex characters"))
		}
	}
	if j.UnsafeSkipCAVerification {
		r.warn(p.Child("unsafeSkipCAVerification"), "the cluster CA is not pinned: whoever answers at the endpoint can take over this node")
	}
	validateDuration(r, j.Timeout, false, p.Child("timeout"))
}

func validateNode(r *Result, n *machineadm.Node, join bool, p *field.Path) {
	if n.Name != "" {
		if msg := dns1123Subdomain(n.Name); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p.Child("name"), n.Name, msg))
		}
	}
	validateURL(r, n.CRISocket, []string{"unix", "npipe"}, p.Child("criSocket"))
	validateLabels(r, n.Labels, p.Child("labels"))
	if n.Taints != nil {
		seen := map[[2]string]bool{}
		for i, t := range *n.Taints {
			tp := p.Child("taints").Index(i)
			if msg := qualifiedName(t.Key); msg != "" {
				r.Errors = append(r.Errors, field.Invalid(tp.Child("key"), t.Key, msg))
			}
			if msgs := k8svalidation.IsValidLabelValue(t.Value); len(msgs) > 0 {
				r.Errors = append(r.Errors, field.Invalid(tp.Child("value"), t.Value, strings.Join(msgs, "; ")))
			}
			if !contains([]string{"NoSchedule", "PreferNoSchedule", "NoExecute"}, t.Effect) {
				r.Errors = append(r.Errors, field.NotSupported(tp.Child("effect"), t.Effect, []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}))
			}
			// As the API server: one taint per key and effect.
			if k := [2]string{t.Key, t.Effect}; seen[k] {
				r.Errors = append(r.Errors, field.Duplicate(tp, t.Key+":"+t.Effect))
			} else {
				seen[k] = true
			}
		}
	}
	validateArgs(r, n.Kubelet.ExtraArgs, p.Child("kubelet", "extraArgs"))
	validateKubeletFlagGates(r, n.Kubelet.ExtraArgs, p.Child("kubelet", "extraArgs"))
	validateKubeletConfig(r, n.Kubelet.Config, n.Kubelet.ExtraArgs, join, p.Child("kubelet", "config"))
}

func validateReport(r *Result, rep *machineadm.Report, p *field.Path) {
	validateAbsFilePath(r, rep.Path, false, p.Child("path"))
	if rep.Sentinel != "-" {
		validateAbsFilePath(r, rep.Sentinel, false, p.Child("sentinel"))
	}
	if rep.URL != "" {
		validateURL(r, rep.URL, []string{"http", "https"}, p.Child("url"))
	}
}

func validateDuration(r *Result, v string, zeroOK bool, p *field.Path) {
	d, err := time.ParseDuration(v)
	if err != nil {
		r.Errors = append(r.Errors, field.Invalid(p, v, "must be a duration such as 90s, 5m or 24h"))
		return
	}
	if d < 0 || (d == 0 && !zeroOK) {
		r.Errors = append(r.Errors, field.Invalid(p, v, "must be positive"))
	}
}

func validateSecret(r *Result, s *machineadm.SecretSource, re *regexp.Regexp, shape string, p *field.Path) {
	switch {
	case s.Value != "" && s.File != "":
		r.Errors = append(r.Errors, field.Forbidden(p, "value and file are mutually exclusive"))
	case s.Value == "" && s.File == "":
		r.Errors = append(r.Errors, field.Required(p, "value or file"))
	case s.File != "":
		// A bad path is not echoed either: what is given where a secret's
		// file belongs is often the secret itself, pasted by mistake
		// (file: abcdef.0123456789abcdef).
		msg := r.pathProblem(s.File, true)
		if msg == "" {
			msg = r.rootDirProblem(s.File)
		}
		if msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p.Child("file"), "<redacted>", msg))
		}
	case !re.MatchString(s.Value):
		// The value itself is secret: never echo it.
		r.Errors = append(r.Errors, field.Invalid(p.Child("value"), "<redacted>", "must be "+shape))
	}
}

// warnInlineSecrets warns about every secret machineadm.SecretFields finds
// inline in the spec — a SecretSource with a value, a URL with
// credentials — unless the field (or a section around it, or a field
// below it) already has an error: a bad value is reported once, as an
// error. Warnings name the field, never the value. Inline PEM keys are
// not warned about (validatePEM checks them; they have no file form).
func warnInlineSecrets(r *Result, c *machineadm.MachineBootstrapConfig) {
	for _, f := range machineadm.SecretFields(c) {
		switch {
		case r.erred(f.Path):
		case f.Kind == machineadm.SecretKindSource && f.Source.Value != "" && f.Source.File == "":
			r.Warnings = append(r.Warnings, Warning{Field: f.Path + ".value", Message: "secret given inline; user data is readable by anyone with read access to the infrastructure, prefer file"})
		}
	}
	// The secret-shape detector (SecretShapes), as render and seal use it:
	// credentials in URLs, and secrets pasted where nothing is secret by
	// design. An owner-only file's content is a secret by design.
	for _, f := range SecretShapes(c) {
		switch {
		case r.erred(f.Path) || f.Kind == machineadm.SecretKindFileContent || r.warnedBeside(f.Path):
		case f.What == "credentials in the URL":
			r.Warnings = append(r.Warnings, Warning{Field: f.Path, Message: urlCredentialsWarning})
		default:
			r.Warnings = append(r.Warnings, Warning{Field: f.Path, Message: "holds " + f.What + ", in the clear: " + shapeWarning})
		}
	}
}

// warnedBeside reports whether a warning names path's parent or a field
// beside or below it (a file's mode already says it holds a private key).
func (r *Result) warnedBeside(path string) bool {
	parent := path
	if i := strings.LastIndexAny(path, ".["); i > 0 {
		parent = path[:i]
	}
	for _, w := range r.Warnings {
		if w.Field == parent || under(w.Field, parent) {
			return true
		}
	}
	return false
}

// shapeWarning follows what the detector found outside a secret field.
const shapeWarning = "machineadm seal does not seal it, the spec holding it is readable wherever it is stored " +
	"(user data: by anyone with read access to the infrastructure), and machineadm render refuses it without --insecure-inline-secrets; " +
	"move the secret into a file with mode 0600 (sealed) or a file reference"

// urlCredentialsWarning is the warning for a URL with user information (a
// password, or a token as the user name): allowed, but the spec is then a
// secret itself.
const urlCredentialsWarning = "the URL carries credentials (user information); machineadm redacts them from logs and reports, " +
	"but the spec holding them is readable wherever it is stored (user data: by anyone with read access to the infrastructure), " +
	"and machineadm render refuses it without --insecure-inline-secrets; prefer credentials that are not in the spec"

// erred reports whether an error names path, a field below it or a
// section around it.
func (r *Result) erred(path string) bool {
	for _, e := range r.Errors {
		if e.Field == path || under(path, e.Field) || under(e.Field, path) {
			return true
		}
	}
	return false
}

// under reports whether path is below parent ("a.b[0]" or "a.b.c" under "a.b").
func under(path, parent string) bool {
	return strings.HasPrefix(path, parent+".") || strings.HasPrefix(path, parent+"[")
}
