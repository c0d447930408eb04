package render

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/redact"
)

// InlineSecretsError refuses a spec that carries secret values inline when
// they would land in user data. User data is readable by anyone with read
// access to the infrastructure (instance metadata, the cloud console, the
// Cluster API bootstrap Secret), which turns a bootstrap token or a CA key
// into cluster-admin.
type InlineSecretsError struct {
	// Fields are the field paths that hold inline secrets, each with what
	// was found, for example "spec.join.token.value: bootstrap token".
	Fields []string
}

func (e *InlineSecretsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the spec carries %d inline secret(s), which would be readable by anyone who can read this machine's user data:", len(e.Fields))
	for _, f := range e.Fields {
		b.WriteString("\n  ")
		b.WriteString(f)
	}
	b.WriteString("\ninstead: reference secrets as files (token: {file: /etc/machineadm/secrets/bootstrap-token}) delivered by a secure channel " +
		"(a secrets manager, an encrypted volume, a per-machine fetch), " +
		"or serve the spec from an access-controlled location with --payload-url; " +
		"--insecure-inline-secrets renders it anyway")
	return b.String()
}

var (
	// pemPrivateKey matches a PEM private key block header (RFC 7468):
	// "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY"...
	pemPrivateKey = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`)
	// bootstrapToken matches a kubeadm bootstrap token
	// (k8s.io/cluster-bootstrap/token/api BootstrapTokenPattern).
	bootstrapToken = regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`)
	// kubeconfigKey matches an embedded kubeconfig client key or token.
	kubeconfigKey = regexp.MustCompile(`\b(client-key-data|token)\s*:\s*\S{16,}`)
)

// InlineSecrets lists the field paths of cfg that carry a secret value
// inline: SecretSource values (join token, certificate key, bootstrap
// tokens), registry and mirror client keys, PEM private keys, bootstrap
// tokens or kubeconfig credentials inside file contents (decoded first),
// static pod manifests and the containerd config patch, and URLs with
// user information (redact.URLHasCredentials: a password or token in
// spec.host.containerd.proxy httpProxy/httpsProxy, spec.report.url,
// spec.host.files[].source.url, registry servers and mirror URLs). Each
// entry is "path: what was found"; values are never included. It returns
// nil for a spec whose secrets are all file references.
func InlineSecrets(cfg *machineadm.MachineBootstrapConfig) []string {
	var out []string
	add := func(path, what string) { out = append(out, path+": "+what) }
	s := &cfg.Spec
	if s.Join != nil && s.Join.Token.Value != "" {
		add("spec.join.token.value", "bootstrap token")
	}
	if cp := s.ControlPlane; cp != nil {
		if cp.CertificateKey != nil && cp.CertificateKey.Value != "" {
			add("spec.controlPlane.certificateKey.value", "certificate key")
		}
		for i, t := range cp.BootstrapTokens {
			if t.Token.Value != "" {
				add(fmt.Sprintf("spec.controlPlane.bootstrapTokens[%d].token.value", i), "bootstrap token")
			}
		}
	}
	url := func(path, raw string) {
		if redact.URLHasCredentials(raw) {
			add(path, "credentials in the URL")
		}
	}
	for i, f := range s.Host.Files {
		if f.Source != nil {
			url(fmt.Sprintf("spec.host.files[%d].source.url", i), f.Source.URL)
		}
		content, err := machineadm.DecodeContent(f.Content, f.Encoding)
		if err != nil {
			content = []byte(f.Content) // validation reports bad encodings; still search the raw text
		}
		if what := secretIn(content); what != "" {
			add(fmt.Sprintf("spec.host.files[%d].content", i), what+" in "+f.Path)
		}
	}
	for i, p := range s.Host.StaticPods {
		if what := secretIn([]byte(p.Manifest)); what != "" {
			add(fmt.Sprintf("spec.host.staticPods[%d].manifest", i), what)
		}
	}
	if c := s.Host.Containerd; c != nil {
		if what := secretIn([]byte(c.ConfigPatch)); what != "" {
			add("spec.host.containerd.configPatch", what)
		}
		if p := c.Proxy; p != nil {
			url("spec.host.containerd.proxy.httpProxy", p.HTTPProxy)
			url("spec.host.containerd.proxy.httpsProxy", p.HTTPSProxy)
		}
		for i, r := range c.Registries {
			rp := fmt.Sprintf("spec.host.containerd.registries[%d]", i)
			url(rp+".server", r.Server)
			if r.ClientKey != "" {
				add(rp+".clientKey", "private key")
			}
			for j, m := range r.Mirrors {
				url(fmt.Sprintf("%s.mirrors[%d].url", rp, j), m.URL)
				if m.ClientKey != "" {
					add(fmt.Sprintf("%s.mirrors[%d].clientKey", rp, j), "private key")
				}
			}
		}
	}
	url("spec.report.url", s.Report.URL)
	return out
}

// secretIn names the kind of secret found in content, or "".
func secretIn(content []byte) string {
	switch {
	case pemPrivateKey.Match(content):
		return "PEM private key"
	case bootstrapToken.Match(content):
		return "bootstrap token"
	case kubeconfigKey.Match(content):
		return "kubeconfig credential"
	}
	return ""
}
