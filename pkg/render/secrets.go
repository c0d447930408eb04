package render

import (
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
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
	b.WriteString("\ninstead: seal them to the machine with `machineadm seal -f SPEC --recipient R -o SEALED` and render SEALED " +
		"(every secret encrypted to a key only the machine holds), or reference secrets as files (token: {file: /etc/machineadm/secrets/bootstrap-token}) delivered by a secure channel " +
		"(a secrets manager, an encrypted volume, a per-machine fetch), " +
		"or serve the spec from an access-controlled location with --payload-url; " +
		"--insecure-inline-secrets renders it anyway")
	return b.String()
}

// secretFormatNames says what an inline SecretSource holds, by format.
var secretFormatNames = map[string]string{
	machineadm.SecretFormatBootstrapToken: "bootstrap token",
	machineadm.SecretFormatCertificateKey: "certificate key",
}

// InlineSecrets lists the field paths of cfg that carry a secret value
// inline, from machineadm.SecretSlots: SecretSource values (join token,
// certificate key, bootstrap tokens) and registry and mirror client keys;
// then what the one secret-shape detector (validation.SecretShapeOf and
// validation.SecretShapes) finds: URLs with user information or a
// presigned signature or token in the query (a password or token in
// spec.host.containerd.proxy httpProxy/httpsProxy, spec.report.url,
// spec.host.files[].source.url, registry servers and mirror URLs),
// private keys (PEM, PGP, PuTTY, also base64-encoded), bootstrap tokens,
// JSON Web Tokens and kubeconfig, registry or password credentials (YAML,
// JSON or TOML) inside file contents (decoded first), static pod
// manifests and the containerd config patch, credentials in component
// flags (extraArgs) and in free-form configuration. Each entry is "path:
// what was found", in the walk's order with flags and free-form
// configuration last; values are never included. It returns nil for a
// spec whose secrets are all file references.
func InlineSecrets(cfg *machineadm.MachineBootstrapConfig) []string {
	var out []string
	add := func(path, what string) { out = append(out, path+": "+what) }
	for _, f := range machineadm.SecretSlots(cfg) {
		switch f.Kind {
		case machineadm.SecretKindSource:
			if f.Source.Value == "" {
				continue
			}
			what := secretFormatNames[f.Format]
			if what == "" {
				what = "secret"
			}
			add(f.Path+".value", what)
		case machineadm.SecretKindPEMKey:
			if *f.Value != "" {
				add(f.Path, "private key")
			}
		default:
			if what := validation.SecretShapeOf(f); what != "" {
				add(f.Path, what)
			}
		}
	}
	for _, s := range validation.SecretShapes(cfg) {
		if s.Kind == "" { // flags and free-form configuration
			add(s.Path, s.What)
		}
	}
	return out
}
