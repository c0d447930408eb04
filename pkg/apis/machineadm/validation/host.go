package validation

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/distribution/reference"
	"github.com/pelletier/go-toml/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// runcOptions are the keys of the runc shim's options table and their
// kinds (containerd api/types/runc/options Options, TOML names). A key
// not listed is silently ignored by containerd, so a misspelling such as
// "SystemdCGroup" would be lost: it is an error here.
var runcOptions = map[string]string{
	"BinaryName": "string", "Root": "string", "ShimCgroup": "string", "CriuPath": "string",
	"CriuImagePath": "string", "CriuWorkPath": "string", "TaskApiAddress": "string",
	"NoPivotRoot": "bool", "NoNewKeyring": "bool", "SystemdCgroup": "bool",
	"IoUid": "uint32", "IoGid": "uint32", "TaskApiVersion": "uint32",
}

// secretTOMLKeys are key names in a configPatch that suggest credentials,
// which would land in the world-readable config.toml: the secret-shape
// detector's credential keys (credentialKinds), compared as credentialKey
// spells them (client_secret and clientSecret as client-secret).
var secretTOMLKeys = credentialKeyNames()

// validateHostPrep adds the host-preparation checks that need more than a
// field's own shape: values that would corrupt the files they are
// written to, cross-field rules, and containerd keys containerd itself
// would silently ignore. Checks that need the host (unknown sysctl keys
// against /proc/sys, remote digests) run in pkg/host before anything is
// written.
func validateHostPrep(r *Result, s *machineadm.MachineBootstrapSpec, p *field.Path) {
	h := &s.Host
	for _, k := range sortedKeys(h.Sysctl) {
		v := h.Sysctl[k]
		switch {
		case strings.TrimSpace(v) == "":
			r.Errors = append(r.Errors, field.Required(p.Child("sysctl").Key(k), "a value"))
		case hasControl(v, false):
			r.Errors = append(r.Errors, field.Invalid(p.Child("sysctl").Key(k), v, "must be one line without control characters"))
		}
	}
	for i, f := range h.Files {
		fp := p.Child("files").Index(i)
		if f.Source != nil && f.Encoding != "" {
			r.Errors = append(r.Errors, field.Forbidden(fp.Child("encoding"), "encoding applies to content; a source is used as fetched"))
		}
		if f.Source != nil {
			if u, err := url.Parse(f.Source.URL); err == nil && u.Scheme == "file" && u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
				r.Errors = append(r.Errors, field.Invalid(fp.Child("source", "url"), redactedURL(f.Source.URL), "a file URL names a path on this machine: file:///path"))
			} else if err == nil && u.Scheme == "file" && u.Opaque == "" && !strings.HasPrefix(u.Path, "/") {
				// file://localhost, without a path (validateURL takes
				// the host for one): it too failed only in host-check.
				r.Errors = append(r.Errors, field.Invalid(fp.Child("source", "url"), redactedURL(f.Source.URL), "a file URL names a path on this machine: file:///path"))
			} else if err == nil && u.Scheme == "file" && path.Clean(u.Path) == "/" {
				// file:///: the root directory, which no source is;
				// it too failed only in host-check.
				r.Errors = append(r.Errors, field.Invalid(fp.Child("source", "url"), redactedURL(f.Source.URL), "a file URL must name a file, not the root directory"))
			} else if err == nil && u.Scheme == "file" && slices.Contains(strings.Split(u.Path, "/"), "..") {
				// Otherwise refused only when the source is read (a
				// path that escapes the root: PayloadUnavailable), a
				// spec error found after host-check began.
				r.Errors = append(r.Errors, field.Invalid(fp.Child("source", "url"), redactedURL(f.Source.URL), "a file URL's path must not contain '..'"))
			}
		}
	}
	if h.Containerd != nil {
		validateContainerdPrep(r, h.Containerd, &s.Node.Kubelet, p.Child("containerd"))
	}
}

func validateContainerdPrep(r *Result, c *machineadm.Containerd, kubelet *machineadm.Kubelet, p *field.Path) {
	if c.SandboxImage != "" {
		if _, err := reference.ParseNormalizedNamed(c.SandboxImage); err != nil {
			r.Errors = append(r.Errors, field.Invalid(p.Child("sandboxImage"), c.SandboxImage, "must be an image reference such as registry.k8s.io/pause:3.10: "+err.Error()))
		}
	}
	if kd, ok := kubelet.Config["cgroupDriver"].(string); ok && kd != c.CgroupDriver {
		r.Errors = append(r.Errors, field.Invalid(p.Child("cgroupDriver"), c.CgroupDriver, fmt.Sprintf("must match spec.node.kubelet.config.cgroupDriver (%q): kubelet and runtime must use one cgroup driver", kd)))
	}
	for i, reg := range c.Registries {
		rp := p.Child("registries").Index(i)
		validatePEM(r, reg.ClientCert, "CERTIFICATE", rp.Child("clientCert"))
		validatePEM(r, reg.ClientKey, "PRIVATE KEY", rp.Child("clientKey"))
		switch {
		case reg.ClientCert != "" && reg.ClientKey == "":
			r.Errors = append(r.Errors, field.Required(rp.Child("clientKey"), "clientCert and clientKey go together"))
		case reg.ClientCert == "" && reg.ClientKey != "":
			r.Errors = append(r.Errors, field.Required(rp.Child("clientCert"), "clientCert and clientKey go together"))
		}
	}
	if px := c.Proxy; px != nil {
		pp := p.Child("proxy")
		for _, kv := range []struct {
			name, value string
		}{{"httpProxy", px.HTTPProxy}, {"httpsProxy", px.HTTPSProxy}} {
			if kv.value == "" {
				continue
			}
			if hasControl(kv.value, true) {
				r.Errors = append(r.Errors, field.Invalid(pp.Child(kv.name), "<redacted>", "must be one URL without spaces or control characters"))
				continue
			}
			if u, err := url.Parse(kv.value); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
				r.Errors = append(r.Errors, field.Invalid(pp.Child(kv.name), "<redacted>", "must be a URL such as http://proxy.example.com:3128 (the value is not shown: it may hold credentials)"))
				continue
			}
			if u, _ := url.Parse(kv.value); portProblem(u.Port()) != "" {
				r.Errors = append(r.Errors, field.Invalid(pp.Child(kv.name), "<redacted>", portProblem(u.Port())+" (the value is not shown: it may hold credentials)"))
				continue
			}
			// With credentials the drop-in is written 0600
			// (pkg/host/containerd); warnInlineSecrets warns.
		}
		if hasControl(px.NoProxy, true) {
			r.Errors = append(r.Errors, field.Invalid(pp.Child("noProxy"), px.NoProxy, "must be a comma-separated list without spaces or control characters"))
		}
	}
	builtin := machineadm.DefaultsFor(r.targetOS()).RuntimeName
	names := map[string]bool{builtin: true}
	for i, rt := range c.Runtimes {
		names[rt.Name] = true
		if rt.Type != "io.containerd.runc.v2" {
			continue
		}
		op := p.Child("runtimes").Index(i).Child("options")
		for _, k := range sortedKeys(rt.Options) {
			kind, known := runcOptions[k]
			if !known {
				r.Errors = append(r.Errors, field.NotSupported(op.Key(k), k, sortedKeys(runcOptions)))
				continue
			}
			if !hasKind(rt.Options[k], kind) {
				r.Errors = append(r.Errors, field.Invalid(op.Key(k), rt.Options[k], "must be a "+kind))
			}
		}
	}
	if c.DefaultRuntime != "" && !names[c.DefaultRuntime] {
		r.Errors = append(r.Errors, field.Invalid(p.Child("defaultRuntime"), c.DefaultRuntime, "must be "+builtin+" or the name of one of spec.host.containerd.runtimes"))
	}
	if c.ConfigPatch != "" {
		var v map[string]any
		if toml.Unmarshal([]byte(c.ConfigPatch), &v) == nil {
			if _, ok := v["version"]; ok {
				r.Errors = append(r.Errors, field.Forbidden(p.Child("configPatch"), "must not set version; use spec.host.containerd.configVersion"))
			}
			if k := findKey(v, secretTOMLKeys); k != "" {
				r.warn(p.Child("configPatch"), "sets %q: config.toml is world-readable (0644); keep credentials out of it", k)
			}
		}
	}
}

// hasControl reports control characters, and with noSpace white space.
func hasControl(s string, noSpace bool) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || (noSpace && unicode.IsSpace(r))
	}) >= 0
}

// hasKind checks a JSON-decoded value against a runc option kind.
func hasKind(v any, kind string) bool {
	switch kind {
	case "string":
		_, ok := v.(string)
		return ok
	case "bool":
		_, ok := v.(bool)
		return ok
	case "uint32":
		f, ok := v.(float64)
		return ok && f >= 0 && f <= 1<<32-1 && f == float64(int64(f))
	}
	return false
}

// findKey returns the first key (case-insensitive) of a TOML tree that is
// one of names, or "".
func findKey(tree map[string]any, names []string) string {
	for k, v := range tree {
		if contains(names, credentialKey(k)) {
			return k
		}
		if sub, ok := v.(map[string]any); ok {
			if f := findKey(sub, names); f != "" {
				return k + "." + f
			}
		}
	}
	return ""
}

// advertiseAddressProblem says why an API server advertise address is
// unusable, or "": it must be an IP address other nodes can reach, so not
// loopback (kubeadm refuses it later, after the host was changed), not
// the unspecified address (0.0.0.0, ::), not multicast and not the IPv4
// broadcast address.
func advertiseAddressProblem(a string) string {
	ip := net.ParseIP(a)
	switch {
	case ip == nil:
		return "must be an IP address"
	case ip.IsLoopback():
		return "must not be a loopback address: other nodes reach the API server there (kubeadm refuses it); leave it empty for the default route's address"
	case ip.IsUnspecified():
		return "must not be the unspecified address (0.0.0.0 or ::); leave it empty for the default route's address"
	case ip.IsMulticast():
		return "must not be a multicast address"
	case ip.Equal(net.IPv4bcast):
		return "must not be the broadcast address"
	}
	return ""
}

// imageRepositoryProblem checks kubernetes.imageRepository, the prefix
// kubeadm puts before "/kube-apiserver:vX.Y.Z" and the other image
// names: host[:port] and optional path components, lower-case, without a
// scheme, tag or digest. The check is the distribution reference grammar
// (github.com/distribution/reference) applied to one such image name.
func imageRepositoryProblem(repo string) string {
	const shape = "must be an image repository such as registry.k8s.io or registry.example.com:5000/k8s (host[:port]/path, lower-case path components, no scheme, tag or digest)"
	if strings.Contains(repo, "://") {
		return shape
	}
	// A tag or digest in repo cannot be followed by "/kube-apiserver":
	// the parse fails for them too.
	if _, err := reference.ParseNormalizedNamed(repo + "/kube-apiserver"); err != nil {
		return shape + ": " + err.Error()
	}
	return ""
}
