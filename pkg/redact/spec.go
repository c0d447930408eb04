package redact

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// SpecSecrets returns the secret values a machine spec holds or points at,
// for every field machineadm.SecretFields finds:
//   - SecretSource fields (spec.join.token,
//     spec.controlPlane.bootstrapTokens[].token,
//     spec.controlPlane.certificateKey): the inline value, or the content
//     of the file, trimmed as the phases read it, and as it is;
//   - the private keys (machineadm.CAKeyFiles) of the CA set in
//     spec.controlPlane.pki.dir;
//   - registry and mirror client keys;
//   - the credentials of every URL that carries user information
//     (URLSecrets);
//   - the content of spec.host.files entries marked secret (a mode
//     without group or other bits, such as "0600"), as written in the
//     spec and decoded.
//
// Free text that may embed a secret (readable files, manifests, the
// containerd config patch) is not a secret by itself and not returned.
// Files are read below root (the host's root directory, "/" in production,
// a test directory in tests). A file that cannot be read is skipped: a
// secret nobody can read cannot leak, and the phase that needs it reports
// the failure.
func SpecSecrets(cfg *machineadm.MachineBootstrapConfig, root string) []string {
	var out []string
	for _, f := range machineadm.SecretFields(cfg) {
		switch f.Kind {
		case machineadm.SecretKindSource:
			out = append(out, f.Source.Value)
			if f.Source.File != "" {
				for _, s := range readFile(root, f.Source.File) {
					out = append(out, s, strings.TrimSpace(s))
				}
			}
		case machineadm.SecretKindCADir:
			for _, name := range machineadm.CAKeyFiles {
				out = append(out, readFile(root, filepath.Join(*f.Value, name))...)
			}
		case machineadm.SecretKindPEMKey:
			out = append(out, *f.Value)
		case machineadm.SecretKindURLCredentials:
			out = append(out, URLSecrets(*f.Value)...)
		case machineadm.SecretKindFileContent:
			out = append(out, *f.Value)
			if f.File.Encoding != machineadm.EncodingPlain {
				if data, err := machineadm.DecodeContent(*f.Value, f.File.Encoding); err == nil {
					out = append(out, string(data))
				}
			}
		}
	}
	var nonEmpty []string
	for _, s := range out {
		if s != "" && !slices.Contains(nonEmpty, s) {
			nonEmpty = append(nonEmpty, s)
		}
	}
	return nonEmpty
}

// ForSpec returns a Redactor that knows SpecSecrets(cfg, root).
func ForSpec(cfg *machineadm.MachineBootstrapConfig, root string) *Redactor {
	return New(SpecSecrets(cfg, root)...)
}

func readFile(root, path string) []string {
	data, err := ReadSecretFile(filepath.Join(root, path))
	if err != nil || len(data) == 0 {
		return nil
	}
	return []string{string(data)}
}
