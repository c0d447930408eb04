package validation

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

func contains[T comparable](list []T, v T) bool { return slices.Contains(list, v) }

func dns1123Subdomain(v string) string {
	return strings.Join(k8svalidation.IsDNS1123Subdomain(v), "; ")
}

func qualifiedName(v string) string {
	return strings.Join(k8svalidation.IsQualifiedName(v), "; ")
}

func validateArgs(r *Result, args []machineadm.Arg, p *field.Path) {
	for i, a := range args {
		if !argNameRE().MatchString(a.Name) {
			msg := "must be a flag name (lower-case letters, digits and dashes; no leading dashes, no =VALUE), for example audit-log-maxage"
			if n := argName(a.Name); n != a.Name && argNameRE().MatchString(n) {
				msg += "; did you mean " + n + "?"
			}
			r.Errors = append(r.Errors, field.Invalid(p.Index(i).Child("name"), a.Name, msg))
		}
		// A flag value lands in a command line: a static pod's command, a
		// systemd unit's ExecStart= (a line break there would start a new
		// unit directive), kubeadm-flags.env. The value is not quoted: a
		// flag may carry a credential.
		if msg := controlByteProblem(a.Value); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p.Index(i).Child("value"), field.OmitValueType{}, msg))
		}
	}
}

// argName is the flag a component would take name for: without leading
// dashes or "=VALUE", lower case, "_" read as "-" (the components'
// flag sets normalise "_" to "-").
func argName(name string) string {
	name, _, _ = strings.Cut(strings.TrimLeft(name, "-"), "=")
	return strings.ToLower(strings.ReplaceAll(name, "_", "-"))
}

// validateSAN accepts an IP address or a DNS name, optionally with one
// leading wildcard label.
func validateSAN(r *Result, san string, p *field.Path) {
	if net.ParseIP(san) != nil {
		return
	}
	name := strings.TrimPrefix(san, "*.")
	if msg := dns1123Subdomain(name); msg != "" {
		r.Errors = append(r.Errors, field.Invalid(p, san, "must be an IP address or DNS name: "+msg))
	}
}

// validateEndpoint checks "host:port" (port optional unless needPort) with
// an IP or DNS host; an IPv6 host is written in brackets when a port
// follows ("[fd00::1]:6443"), with or without brackets otherwise.
func validateEndpoint(r *Result, ep string, needPort bool, p *field.Path) {
	if msg := endpointSchemeProblem(ep); msg != "" {
		r.Errors = append(r.Errors, field.Invalid(p, ep, msg))
		return
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		if needPort {
			r.Errors = append(r.Errors, field.Invalid(p, ep, "must be host:port"))
			return
		}
		host = ep
		if strings.HasPrefix(ep, "[") && strings.HasSuffix(ep, "]") {
			host = ep[1 : len(ep)-1]
		}
	} else {
		// SplitHostPort accepts an empty port ("host:").
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			r.Errors = append(r.Errors, field.Invalid(p, ep, "port must be between 1 and 65535"))
		}
	}
	if net.ParseIP(host) == nil {
		if msg := dns1123Subdomain(host); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p, ep, "host must be an IP address or DNS name: "+msg))
		}
	}
}

// validateCIDRs checks one CIDR, or two of different IP families
// separated by a comma (dual stack), as kubeadm accepts. Each must be a
// network address: "10.244.1.0/16" has host bits set and is refused with
// the network address it probably means (10.244.0.0/16); kubeadm and the
// controller manager would otherwise each mask it their own way, or not.
func validateCIDRs(r *Result, v string, p *field.Path) {
	if v == "" {
		return
	}
	parts := strings.Split(v, ",")
	var v4 int
	for _, c := range parts {
		ip, n, err := net.ParseCIDR(strings.TrimSpace(c))
		if err != nil {
			r.Errors = append(r.Errors, field.Invalid(p, v, "must be a CIDR such as 10.244.0.0/16, comma-separated for dual stack"))
			return
		}
		if !ip.Equal(n.IP) {
			r.Errors = append(r.Errors, field.Invalid(p, v, fmt.Sprintf("%s has host bits set: the network address of that prefix is %s", strings.TrimSpace(c), n)))
			return
		}
		if ip.To4() != nil {
			v4++
		}
	}
	if len(parts) > 2 || (len(parts) == 2 && v4 != 1) {
		r.Errors = append(r.Errors, field.Invalid(p, v, "dual stack takes exactly one IPv4 and one IPv6 CIDR"))
	}
}

// validateURL checks a URL with one of the given schemes and reports
// whether it is valid. http and https URLs need a host; other schemes
// (file, unix, npipe) need a path. A URL with credentials in it is not
// echoed in the error.
func validateURL(r *Result, v string, schemes []string, p *field.Path) bool {
	u, err := url.Parse(v)
	ok := err == nil && contains(schemes, u.Scheme)
	if ok && (u.Scheme == "http" || u.Scheme == "https") {
		ok = u.Host != ""
		if msg := portProblem(u.Port()); ok && msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p, redactedURL(v), msg))
			return false
		}
	} else if ok {
		ok = u.Path != "" || u.Host != ""
	}
	if !ok {
		shown := redactedURL(v)
		detail := "must be a URL with scheme " + strings.Join(schemes, ", ")
		if machineadm.URLHasCredentials(v) {
			detail += " (the value is not shown: it carries credentials)"
		}
		r.Errors = append(r.Errors, field.Invalid(p, shown, detail))
	}
	return ok
}

// validateAbsPath checks an absolute, clean path without ".." or control
// characters.
func validateAbsPath(r *Result, v string, optional bool, p *field.Path) {
	if v == "" {
		if !optional {
			r.Errors = append(r.Errors, field.Required(p, "an absolute path"))
		}
		return
	}
	if msg := r.pathProblem(v, true); msg != "" {
		r.Errors = append(r.Errors, field.Invalid(p, v, msg))
	}
}

// validateAbsFilePath is validateAbsPath for a path that names a file
// (a report, a sentinel, a configuration file, a binary, a key): the root
// directory, "/" (or a Windows volume's root), is refused too. Accepted, it
// failed only on the host: a report at "/" was lost with a warning while
// the run went on.
func validateAbsFilePath(r *Result, v string, optional bool, p *field.Path) {
	n := len(r.Errors)
	validateAbsPath(r, v, optional, p)
	if len(r.Errors) == n && v != "" {
		if msg := r.rootDirProblem(v); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p, v, msg))
		}
	}
}

// rootDirProblem says what is wrong with an absolute path that must name a
// file when it names the root directory ("/", or a Windows volume's
// "C:/"), or "".
func (r *Result) rootDirProblem(v string) string {
	if _, rest := r.splitVolume(v); rest == "/" {
		return "must name a file, not the root directory"
	}
	return ""
}

// pathProblem says what is wrong with a machine path, or "": a control
// character (a byte below 0x20, such as NUL, tab or newline, or DEL 0x7f,
// which would split or corrupt the unit files, flags and logs the path
// lands in), a relative path, a ".." component, and with clean anything
// path.Clean would change.
func (r *Result) pathProblem(v string, clean bool) string {
	if msg := controlByteProblem(v); msg != "" {
		return msg
	}
	_, v = r.splitVolume(v)
	if !strings.HasPrefix(v, "/") {
		return "must be an absolute path"
	}
	if slices.Contains(strings.Split(v, "/"), "..") {
		return "must not contain '..'"
	}
	if clean && path.Clean(v) != v {
		return "must be a clean path (no '//', '.' or trailing '/')"
	}
	if r.targetOS() == machineadm.OSWindows {
		return windowsNameProblem(v)
	}
	return ""
}

// windowsReservedRE is a Windows device name (CON, NUL, COM1…), which a
// file name is whatever its extension ("nul.txt" is NUL too).
var windowsReservedRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$`)
})

// windowsNameProblem says what is wrong with rest, a Windows path after
// its drive in slash form, or "": a character no Windows file name has
// (a ':' there names an alternate data stream of another file), a device
// name, or a name ending in a dot or space (Windows drops them, so it is
// another file than the one written).
func windowsNameProblem(rest string) string {
	for _, name := range strings.Split(rest, "/") {
		switch {
		case name == "":
		case strings.ContainsAny(name, `<>:"|?*`):
			return `must not contain < > : " | ? * after the drive (a ':' names an alternate data stream)`
		case windowsReservedRE().MatchString(name):
			return fmt.Sprintf("%q is a Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9), not a file", name)
		case strings.HasSuffix(name, ".") || strings.HasSuffix(name, " "):
			return fmt.Sprintf("%q ends in a dot or space, which Windows drops", name)
		}
	}
	return ""
}

// controlByteProblem says where v holds an ASCII control character (below
// 0x20, or DEL), naming the byte and its offset but never quoting v, or "".
func controlByteProblem(v string) string {
	if i := strings.IndexFunc(v, isControlByte); i >= 0 {
		return fmt.Sprintf("must not contain control characters (NUL, tab, newline, other bytes below 0x20, DEL): byte 0x%02x at offset %d", v[i], i)
	}
	return ""
}

// isControlByte reports an ASCII control character: below 0x20, or DEL.
func isControlByte(r rune) bool { return r < 0x20 || r == 0x7f }

// restrictedLabelNamespaces are the label namespaces (and their
// subdomains) in which a kubelet may set only the labels that
// k8s.io/kubelet/pkg/apis.IsKubeletLabel allows: the kubelet refuses to
// start with others, and the NodeRestriction admission plugin refuses them.
var restrictedLabelNamespaces = []string{"kubernetes.io", "k8s.io"}

func validateLabels(r *Result, labels map[string]string, p *field.Path) {
	for _, k := range sortedKeys(labels) {
		v := labels[k]
		if msg := qualifiedName(k); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p.Key(k), k, msg))
			continue
		}
		if msgs := k8svalidation.IsValidLabelValue(v); len(msgs) > 0 {
			r.Errors = append(r.Errors, field.Invalid(p.Key(k), v, strings.Join(msgs, "; ")))
		}
		prefix, _, found := strings.Cut(k, "/")
		if !found || kubeletapis.IsKubeletLabel(k) {
			continue
		}
		for _, ns := range restrictedLabelNamespaces {
			if prefix == ns || strings.HasSuffix(prefix, "."+ns) {
				r.Errors = append(r.Errors, field.Forbidden(p.Key(k), "a kubelet may not set labels in the "+ns+" namespace other than its own (kubelet.kubernetes.io, node.kubernetes.io, hostname, os, arch, zone, region, instance type); the NodeRestriction admission plugin refuses them. Set it from the control plane instead"))
			}
		}
	}
}

// validateKubeletConfig decodes the partial KubeletConfiguration strictly
// so that misspelled or mistyped kubelet fields are reported by path, for
// example spec.node.kubelet.config.maxPod, then checks its numbers and
// durations against the kubelet's ranges (validateKubeletRanges; args are
// spec.node.kubelet.extraArgs, for their --feature-gates; join is true
// for spec.action Join).
func validateKubeletConfig(r *Result, cfg map[string]any, args []machineadm.Arg, join bool, p *field.Path) {
	if len(cfg) == 0 {
		return
	}
	for _, k := range []string{"apiVersion", "kind"} {
		if _, ok := cfg[k]; ok {
			r.Errors = append(r.Errors, field.Forbidden(p.Child(k), "set by machineadm; give KubeletConfiguration fields only"))
		}
	}
	// machineadm writes spec.host.staticPods into this directory: it must
	// be a usable machine path (a trailing "/" is fine, the kubelet and
	// pkg/host/staticpod clean it). "" turns static pods off (the stig
	// profile's default on workers; validateStaticPodPathOff).
	if sp, ok := cfg["staticPodPath"].(string); ok && sp != "" {
		if msg := r.pathProblem(sp, false); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(p.Child("staticPodPath"), sp, msg))
		}
	}
	// kubeadm applies the configuration as a JSON merge patch, in which
	// a null member removes the field: the kubelet then sees its default
	// (shutdownGracePeriod: null is 0s, featureGates: {MemoryQoS: null}
	// leaves the gate on, a null reservedMemory limit is no limit), not
	// what null decodes into (an unreadable duration, false, zero). So the
	// configuration is decoded without them.
	patched, _ := withoutMergePatchNulls(cfg).(map[string]any)
	jsonData, err := json.Marshal(patched)
	if err != nil {
		r.Errors = append(r.Errors, field.Invalid(p, field.OmitValueType{}, err.Error()))
		return
	}
	var kc kubeletv1beta1.KubeletConfiguration
	strictErrs, err := sigsjson.UnmarshalStrict(jsonData, &kc)
	if err != nil {
		// The decoder stops at the first problem, and names no path for
		// a value its type cannot read (a duration, a quantity): find
		// each one.
		for _, pr := range kubeletDecodeProblems(patched, p, err) {
			if m := kubeletTypeRE().FindStringSubmatch(pr.err.Error()); m != nil {
				r.Errors = append(r.Errors, field.TypeInvalid(pr.path, field.OmitValueType{}, "got "+m[1]+", want "+m[3]+" (KubeletConfiguration, kubelet.config.k8s.io/v1beta1)"))
			} else {
				r.Errors = append(r.Errors, field.Invalid(pr.path, field.OmitValueType{}, kubeletValueFormat(pr.t)+": "+pr.err.Error()))
			}
		}
		return
	}
	const notAField = "not a KubeletConfiguration (kubelet.config.k8s.io/v1beta1) field"
	for _, e := range strictErrs {
		m := kubeletStrictRE().FindStringSubmatch(e.Error())
		if m == nil {
			r.Errors = append(r.Errors, field.Invalid(p, field.OmitValueType{}, "KubeletConfiguration (kubelet.config.k8s.io/v1beta1): "+e.Error()))
			continue
		}
		fp := DottedPath(p, m[2])
		if m[1] == "duplicate" {
			r.Errors = append(r.Errors, field.Duplicate(fp, field.OmitValueType{}))
		} else {
			r.Errors = append(r.Errors, field.Invalid(fp, field.OmitValueType{}, notAField))
		}
	}
	// A misspelled field set to null removes nothing; it is still a
	// misspelling.
	for _, fp := range kubeletUnknownNullFields(p, cfg) {
		r.Errors = append(r.Errors, field.Invalid(fp, field.OmitValueType{}, notAField))
	}
	validateKubeletRanges(r, cfg, &kc, args, join, p)
}

// withoutMergePatchNulls returns v without the null members of its
// objects, at any depth and inside lists too, which is what kubeadm's JSON
// merge patch (gopkg.in/evanphx/json-patch.v4 MergePatch) leaves of them:
// a null member removes the field, and the library drops the null members
// of the objects a patch adds, lists' included. A null list element stays.
func withoutMergePatchNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if e != nil {
				out[k] = withoutMergePatchNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutMergePatchNulls(e)
		}
		return out
	}
	return v
}

var (
	// sigs.k8s.io/json's strict problems: `unknown field "a.b"`.
	kubeletStrictRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`) })
	// and its type mismatch: `json: cannot unmarshal V into Go struct field
	// KubeletConfiguration.a.b of type T`.
	kubeletTypeRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^json: cannot unmarshal (.+) into Go struct field [A-Za-z0-9_]+\.(\S+) of type (.+)$`)
	})
)

// DottedPath appends a dotted JSON path such as "a.b[0].c" or
// "a.m[key]" to p (nil p: the path starts at the first name). Numeric
// brackets become list indices, others map keys. It parses the paths that
// sigs.k8s.io/json puts in its strict and type errors.
func DottedPath(p *field.Path, dotted string) *field.Path {
	for _, part := range strings.Split(dotted, ".") {
		name, rest, _ := strings.Cut(part, "[")
		p = p.Child(name)
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			if n, err := strconv.Atoi(idx); err == nil {
				p = p.Index(n)
			} else {
				p = p.Key(idx)
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return p
}

func validateHost(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	h := &s.Host
	for _, k := range sortedKeys(h.Sysctl) {
		if !sysctlKeyRE().MatchString(k) {
			r.Errors = append(r.Errors, field.Invalid(p.Child("sysctl").Key(k), k, "must be a dotted kernel parameter name such as net.ipv4.ip_forward"))
		}
	}
	for i, m := range h.KernelModules {
		if !moduleRE().MatchString(m) {
			r.Errors = append(r.Errors, field.Invalid(p.Child("kernelModules").Index(i), m, "must be a kernel module name such as br_netfilter: letters, digits, '_' and '-', not starting with '-'"))
		}
	}
	seen := map[string]bool{}
	for i := range h.Files {
		validateFile(r, &h.Files[i], seen, p.Child("files").Index(i))
	}
	validateSharedPaths(r, h.Files, p.Child("files"))
	if h.Containerd != nil {
		validateContainerd(r, h.Containerd, p.Child("containerd"))
	}
	if len(h.StaticPods) > 0 && s.Role != machineadm.RoleControlPlane {
		r.Errors = append(r.Errors, field.Forbidden(p.Child("staticPods"), "extra static pods are for role ControlPlane only"))
	}
	names := map[string]bool{}
	for i, sp := range h.StaticPods {
		sp := sp
		validateStaticPod(r, &sp, names, p.Child("staticPods").Index(i))
	}
}

// validateSharedPaths checks the entries that name one path (a file
// written and then appended to): the host keeps the last entry's mode,
// owner and group for the whole file. Once an entry is owner-only (its
// content is a secret, sealed as such), a later entry for the path must
// be owner-only too and keep its owner and group; otherwise the secret
// would end up in a file readable by others or owned by another user.
// Narrowing (a readable file appended to by an owner-only entry) is fine.
// The later entry's field is reported, naming the owner-only one.
func validateSharedPaths(r *Result, files []machineadm.File, p *field.Path) {
	secret := map[string]int{}
	for i := range files {
		f := &files[i]
		j, ok := secret[r.fileKey(f.Path)]
		if !ok {
			if machineadm.OwnerOnly(f.Mode) {
				secret[r.fileKey(f.Path)] = i
			}
			continue
		}
		g := &files[j]
		const why = ": it holds the owner-only (secret) content of %s, and the host keeps the last entry's mode, owner and group for the whole file"
		if !machineadm.OwnerOnly(f.Mode) {
			r.Errors = append(r.Errors, field.Invalid(p.Index(i).Child("mode"), f.Mode, fmt.Sprintf("must be owner-only like %s (%q)"+why, p.Index(j).Child("mode"), g.Mode, p.Index(j))))
		}
		if orZero(f.Owner) != orZero(g.Owner) {
			r.Errors = append(r.Errors, field.Invalid(p.Index(i).Child("owner"), f.Owner, fmt.Sprintf("must equal %s (%q)"+why, p.Index(j).Child("owner"), g.Owner, p.Index(j))))
		}
		if orZero(f.Group) != orZero(g.Group) {
			r.Errors = append(r.Errors, field.Invalid(p.Index(i).Child("group"), f.Group, fmt.Sprintf("must equal %s (%q)"+why, p.Index(j).Child("group"), g.Group, p.Index(j))))
		}
	}
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func validateFile(r *Result, f *machineadm.File, seen map[string]bool, p *field.Path) {
	validateAbsFilePath(r, f.Path, false, p.Child("path"))
	if f.Path != "" && seen[r.fileKey(f.Path)] && !f.Append {
		r.Errors = append(r.Errors, field.Duplicate(p.Child("path"), f.Path))
	}
	seen[r.fileKey(f.Path)] = true
	if f.Source != nil {
		if f.Content != "" {
			r.Errors = append(r.Errors, field.Forbidden(p.Child("source"), "content and source are mutually exclusive"))
		}
		if f.Append {
			r.Errors = append(r.Errors, field.Forbidden(p.Child("append"), "append works with content only"))
		}
		validateURL(r, f.Source.URL, []string{"http", "https", "file"}, p.Child("source", "url"))
		if !sha256RE().MatchString(f.Source.SHA256) {
			r.Errors = append(r.Errors, field.Invalid(p.Child("source", "sha256"), f.Source.SHA256, "must be 64 lower-case hex characters"))
		}
	}
	// Decoded once (bounded: machineadm.MaxContentBytes); the content is
	// never echoed.
	var content []byte
	switch f.Encoding {
	case machineadm.EncodingPlain, machineadm.EncodingBase64, machineadm.EncodingGzipBase64:
		var err error
		if content, err = machineadm.DecodeContent(f.Content, f.Encoding); err != nil {
			detail := "does not decode as " + f.Encoding + ": " + err.Error()
			if f.Encoding == machineadm.EncodingPlain {
				detail = err.Error()
			}
			r.Errors = append(r.Errors, field.Invalid(p.Child("content"), "<content>", detail))
		}
	default:
		r.Errors = append(r.Errors, field.NotSupported(p.Child("encoding"), f.Encoding, []string{"", "base64", "gzip+base64"}))
	}
	if !fileModeRE().MatchString(f.Mode) {
		r.Errors = append(r.Errors, field.Invalid(p.Child("mode"), f.Mode, "must be an octal permission between 0000 and 0777 such as 0644 (setuid, setgid and sticky bits are refused)"))
	} else if m, _ := strconv.ParseUint(f.Mode, 8, 32); m&0o077 != 0 && bytes.Contains(content, []byte("PRIVATE KEY-----")) {
		r.warn(p.Child("mode"), "the file holds a private key and mode %s lets others read it; use 0600", f.Mode)
	}
	if !ownerRE().MatchString(f.Owner) {
		r.Errors = append(r.Errors, field.Invalid(p.Child("owner"), f.Owner, "must be a user name or numeric uid"))
	}
	if !ownerRE().MatchString(f.Group) {
		r.Errors = append(r.Errors, field.Invalid(p.Child("group"), f.Group, "must be a group name or numeric gid"))
	}
}

func validateContainerd(r *Result, c *machineadm.Containerd, p *field.Path) {
	if c.ConfigVersion != 0 && c.ConfigVersion != 2 && c.ConfigVersion != 3 {
		r.Errors = append(r.Errors, field.NotSupported(p.Child("configVersion"), strconv.Itoa(c.ConfigVersion), []string{"2", "3"}))
	}
	validateAbsFilePath(r, c.ConfigFile, false, p.Child("configFile"))
	if !contains([]string{"systemd", "cgroupfs"}, c.CgroupDriver) {
		r.Errors = append(r.Errors, field.NotSupported(p.Child("cgroupDriver"), c.CgroupDriver, []string{"systemd", "cgroupfs"}))
	}
	hosts := map[string]bool{}
	for i, reg := range c.Registries {
		rp := p.Child("registries").Index(i)
		if reg.Host == "" {
			r.Errors = append(r.Errors, field.Required(rp.Child("host"), "registry host such as docker.io"))
		} else if hosts[reg.Host] {
			r.Errors = append(r.Errors, field.Duplicate(rp.Child("host"), reg.Host))
		} else {
			validateEndpoint(r, reg.Host, false, rp.Child("host"))
		}
		hosts[reg.Host] = true
		if reg.Server != "" {
			validateURL(r, reg.Server, []string{"http", "https"}, rp.Child("server"))
		}
		validatePEM(r, reg.CACert, "CERTIFICATE", rp.Child("caCert"))
		for j, m := range reg.Mirrors {
			mp := rp.Child("mirrors").Index(j)
			validateURL(r, m.URL, []string{"http", "https"}, mp.Child("url"))
			for k, cap := range m.Capabilities {
				if !contains([]string{"pull", "resolve", "push"}, cap) {
					r.Errors = append(r.Errors, field.NotSupported(mp.Child("capabilities").Index(k), cap, []string{"pull", "resolve", "push"}))
				}
			}
			validatePEM(r, m.CACert, "CERTIFICATE", mp.Child("caCert"))
			validatePEM(r, m.ClientCert, "CERTIFICATE", mp.Child("clientCert"))
			validatePEM(r, m.ClientKey, "PRIVATE KEY", mp.Child("clientKey"))
			switch {
			case m.ClientCert != "" && m.ClientKey == "":
				r.Errors = append(r.Errors, field.Required(mp.Child("clientKey"), "clientCert and clientKey go together"))
			case m.ClientCert == "" && m.ClientKey != "":
				r.Errors = append(r.Errors, field.Required(mp.Child("clientCert"), "clientCert and clientKey go together"))
			}
		}
	}
	names := map[string]bool{}
	for i, rt := range c.Runtimes {
		rp := p.Child("runtimes").Index(i)
		if !podNameRE().MatchString(rt.Name) {
			r.Errors = append(r.Errors, field.Invalid(rp.Child("name"), rt.Name, "must be a runtime handler name such as runc, nvidia or kata"))
		} else if names[rt.Name] {
			r.Errors = append(r.Errors, field.Duplicate(rp.Child("name"), rt.Name))
		}
		names[rt.Name] = true
	}
	if c.ConfigPatch != "" {
		var v map[string]any
		if err := toml.Unmarshal([]byte(c.ConfigPatch), &v); err != nil {
			r.Errors = append(r.Errors, field.Invalid(p.Child("configPatch"), "<toml>", "not valid TOML: "+err.Error()))
		}
	}
}

// validatePEM checks that v, when set, holds only PEM blocks whose type
// ends in want ("CERTIFICATE", or "PRIVATE KEY" for PKCS#1, SEC 1 and
// PKCS#8 keys). The value is never echoed: keys are secret.
func validatePEM(r *Result, v, want string, p *field.Path) {
	if v == "" {
		return
	}
	rest := []byte(v)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if !strings.HasSuffix(b.Type, want) {
			r.Errors = append(r.Errors, field.Invalid(p, field.OmitValueType{}, "holds a PEM "+strconv.Quote(b.Type)+" block, want "+want))
			return
		}
		n++
	}
	if n == 0 || strings.TrimSpace(string(rest)) != "" {
		r.Errors = append(r.Errors, field.Invalid(p, field.OmitValueType{}, "must be PEM-encoded "+want+" blocks only"))
	}
}

func validateStaticPod(r *Result, sp *machineadm.StaticPod, names map[string]bool, p *field.Path) {
	if !podNameRE().MatchString(sp.Name) {
		r.Errors = append(r.Errors, field.Invalid(p.Child("name"), sp.Name, "must be a DNS label such as audit-forwarder"))
	} else if names[sp.Name] {
		r.Errors = append(r.Errors, field.Duplicate(p.Child("name"), sp.Name))
	}
	names[sp.Name] = true
	if _, err := DecodePod(sp.Manifest); err != nil {
		r.Errors = append(r.Errors, field.Invalid(p.Child("manifest"), "<manifest>", err.Error()))
	}
}

// DecodePod strictly decodes a v1 Pod manifest in YAML or JSON. Unknown
// fields, a kind other than Pod or an apiVersion other than v1, and a pod
// without containers are errors.
func DecodePod(manifest string) (*corev1.Pod, error) {
	data, err := yaml.YAMLToJSONStrict([]byte(manifest))
	if err != nil {
		return nil, err
	}
	var pod corev1.Pod
	strictErrs, err := sigsjson.UnmarshalStrict(data, &pod)
	if err != nil {
		return nil, err
	}
	if len(strictErrs) > 0 {
		return nil, strictErrs[0]
	}
	if pod.APIVersion != "v1" || pod.Kind != "Pod" {
		return nil, &podShapeError{"must be apiVersion v1, kind Pod"}
	}
	if pod.Name == "" {
		return nil, &podShapeError{"metadata.name is required"}
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, &podShapeError{"spec.containers must list at least one container"}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == "" || c.Image == "" {
			return nil, &podShapeError{"every container needs a name and an image"}
		}
	}
	return &pod, nil
}

type podShapeError struct{ msg string }

func (e *podShapeError) Error() string { return e.msg }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
