package render

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
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

// secretFormatNames says what an inline SecretSource holds, by format.
var secretFormatNames = map[string]string{
	machineadm.SecretFormatBootstrapToken: "bootstrap token",
	machineadm.SecretFormatCertificateKey: "certificate key",
}

// InlineSecrets lists the field paths of cfg that carry a secret value
// inline, from machineadm.SecretFields: SecretSource values (join token,
// certificate key, bootstrap tokens), registry and mirror client keys,
// URLs with user information (a password or token in
// spec.host.containerd.proxy httpProxy/httpsProxy, spec.report.url,
// spec.host.files[].source.url, registry servers and mirror URLs), and PEM
// private keys, bootstrap tokens or kubeconfig credentials found inside
// file contents (decoded first, with machineadm.DecodeContent's bound),
// static pod manifests and the containerd config patch. Each entry is
// "path: what was found", in the walk's order; values are never included.
// It returns nil for a spec whose secrets are all file references.
func InlineSecrets(cfg *machineadm.MachineBootstrapConfig) []string {
	var out []string
	add := func(path, what string) { out = append(out, path+": "+what) }
	for _, f := range machineadm.SecretFields(cfg) {
		if !f.Inline() {
			continue
		}
		switch f.Kind {
		case machineadm.SecretKindSource:
			what := secretFormatNames[f.Format]
			if what == "" {
				what = "secret"
			}
			add(f.Path+".value", what)
		case machineadm.SecretKindPEMKey:
			add(f.Path, "private key")
		case machineadm.SecretKindURLCredentials:
			add(f.Path, "credentials in the URL")
		case machineadm.SecretKindFileContent, machineadm.SecretKindText:
			content := []byte(*f.Value)
			in := ""
			if f.File != nil {
				in = " in " + f.File.Path
				if dec, err := machineadm.DecodeContent(*f.Value, f.File.Encoding); err == nil {
					content = dec // validation reports bad encodings; else search the raw text
				}
			}
			if what := secretIn(content); what != "" {
				add(f.Path, what+in)
			}
		}
	}
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
