package redact

import (
	"path/filepath"
	"strconv"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// pkiKeyFiles are the private keys of the shared CA set, relative to
// spec.controlPlane.pki.dir, in kubeadm's layout
// (k8s.io/kubernetes/cmd/kubeadm/app/constants: CAKeyName, ...).
var pkiKeyFiles = []string{"ca.key", "front-proxy-ca.key", "sa.key", filepath.Join("etcd", "ca.key")}

// SpecSecrets returns the secret values a machine spec holds or points at:
//   - spec.join.token, spec.controlPlane.bootstrapTokens[].token and
//     spec.controlPlane.certificateKey, inline or read from their file;
//   - the private keys of the CA set in spec.controlPlane.pki.dir;
//   - registry and mirror client keys;
//   - the credentials of every URL that carries user information
//     (URLSecrets): spec.host.containerd.proxy httpProxy and httpsProxy,
//     spec.report.url, spec.host.files[].source.url, registry servers and
//     mirror URLs;
//   - spec.host.domainJoin's password and offline-join blob;
//   - the content of spec.host.files entries that only their owner may
//     read (mode without group or other bits, such as "0600").
//
// Files are read below root (the host's root directory, "/" in production,
// a test directory in tests). A file that cannot be read is skipped: a
// secret nobody can read cannot leak, and the phase that needs it reports
// the failure.
func SpecSecrets(cfg *machineadm.MachineBootstrapConfig, root string) []string {
	if cfg == nil {
		return nil
	}
	var out []string
	source := func(s *machineadm.SecretSource) {
		if s == nil {
			return
		}
		if s.Value != "" {
			out = append(out, s.Value)
		}
		if s.File != "" {
			out = append(out, readFile(root, s.File)...)
		}
	}
	spec := &cfg.Spec
	if spec.Join != nil {
		source(&spec.Join.Token)
	}
	if cp := spec.ControlPlane; cp != nil {
		source(cp.CertificateKey)
		for i := range cp.BootstrapTokens {
			source(&cp.BootstrapTokens[i].Token)
		}
		if cp.PKI.Dir != "" {
			for _, name := range pkiKeyFiles {
				out = append(out, readFile(root, filepath.Join(cp.PKI.Dir, name))...)
			}
		}
	}
	if cd := spec.Host.Containerd; cd != nil {
		for _, reg := range cd.Registries {
			out = append(out, reg.ClientKey)
			out = append(out, URLSecrets(reg.Server)...)
			for _, m := range reg.Mirrors {
				out = append(out, m.ClientKey)
				out = append(out, URLSecrets(m.URL)...)
			}
		}
		if p := cd.Proxy; p != nil {
			out = append(out, URLSecrets(p.HTTPProxy)...)
			out = append(out, URLSecrets(p.HTTPSProxy)...)
		}
	}
	for _, f := range spec.Host.Files {
		if mode, err := strconv.ParseUint(f.Mode, 8, 32); err == nil && mode&0o077 == 0 && f.Content != "" {
			out = append(out, f.Content)
		}
		if f.Source != nil {
			out = append(out, URLSecrets(f.Source.URL)...)
		}
	}
	out = append(out, URLSecrets(spec.Report.URL)...)
	if dj := spec.Host.DomainJoin; dj != nil {
		if dj.Credentials != nil {
			source(&dj.Credentials.Password)
		}
		source(dj.OfflineJoinBlob)
	}
	var nonEmpty []string
	for _, s := range out {
		if s != "" {
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
