// Package sealspec connects machineadm's sealed-secrets envelope
// (pkg/seal) to the machine spec: which fields are sealed, how a sealed
// spec refers to them, and the logic of `machineadm keygen`, `machineadm
// seal` and `machineadm unseal --check`.
//
// # How a sealed spec refers to its secrets
//
// A sealed file is two YAML documents: the spec, readable by anyone, and
// its SealedSecrets envelope. The spec keeps its shape and validates as it
// is (no new field types); each envelope item is named by the spec field
// path whose secret it carries, and on the machine the item replaces that
// field:
//
//   - spec.join.token, spec.controlPlane.certificateKey,
//     spec.controlPlane.bootstrapTokens[i].token (SecretSource): the spec
//     keeps its file reference (`file: /etc/machineadm/secrets/token`, or,
//     for a value that was inline, `file: /etc/machineadm/sealed/<item
//     path>`). With an envelope that has the item, the file is never read.
//   - spec.controlPlane.pki.dir: the spec keeps the directory; the CA set
//     (ca.crt, ca.key, front-proxy-ca.*, etcd/ca.*, sa.key, sa.pub, those
//     present) is one item "spec.controlPlane.pki.dir" holding a directory
//     bundle (bundle.go), returned by Unseal as Unsealed.PKIFiles.
//   - spec.host.containerd.registries[i] (and .mirrors[j]) clientKey with
//     its clientCert: both leave the spec and become items.
//   - spec.host.files[i] whose mode gives no access to group and others
//     (for example "0600") and that has content: content and encoding
//     leave the spec; the item holds the decoded bytes.
//
// An operator reading the clear spec sees every reference it had; what the
// machine will find there is in the envelope, listed by the same paths.
package sealspec

import (
	"fmt"
	"path"
	"strconv"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Kinds of sealed fields.
const (
	kindSource  = iota // a *SecretSource
	kindString         // an inline string field that leaves the spec
	kindContent        // spec.host.files[i]: content and encoding
)

// field is one secret-bearing field of a spec.
type field struct {
	path string
	kind int
	src  *machineadm.SecretSource // kindSource
	str  *string                  // kindString
	file *machineadm.File         // kindContent
}

// PKIDirItem is the item path prefix of the CA set's files.
const PKIDirItem = "spec.controlPlane.pki.dir"

// PKIFiles are the files of spec.controlPlane.pki.dir that seal takes, in
// kubeadm's layout as `machineadm pki init` writes them
// (k8s.io/kubernetes/cmd/kubeadm/app/constants).
var PKIFiles = []string{
	"ca.crt", "ca.key",
	"front-proxy-ca.crt", "front-proxy-ca.key",
	path.Join("etcd", "ca.crt"), path.Join("etcd", "ca.key"),
	"sa.key", "sa.pub",
}

// secretFields lists the fields of cfg that hold or point at a secret,
// with pointers into cfg. It is the one walk sealing and unsealing share;
// TODO(issue 9): switch to the spec-wide secret walk when it lands.
func secretFields(cfg *machineadm.MachineBootstrapConfig) []field {
	var out []field
	s := &cfg.Spec
	if s.Join != nil {
		out = append(out, field{path: "spec.join.token", kind: kindSource, src: &s.Join.Token})
	}
	if cp := s.ControlPlane; cp != nil {
		if cp.CertificateKey != nil {
			out = append(out, field{path: "spec.controlPlane.certificateKey", kind: kindSource, src: cp.CertificateKey})
		}
		for i := range cp.BootstrapTokens {
			out = append(out, field{path: fmt.Sprintf("spec.controlPlane.bootstrapTokens[%d].token", i), kind: kindSource, src: &cp.BootstrapTokens[i].Token})
		}
	}
	if cd := s.Host.Containerd; cd != nil {
		for i := range cd.Registries {
			r := &cd.Registries[i]
			p := fmt.Sprintf("spec.host.containerd.registries[%d]", i)
			out = append(out,
				field{path: p + ".clientKey", kind: kindString, str: &r.ClientKey},
				field{path: p + ".clientCert", kind: kindString, str: &r.ClientCert})
			for j := range r.Mirrors {
				m := &r.Mirrors[j]
				mp := fmt.Sprintf("%s.mirrors[%d]", p, j)
				out = append(out,
					field{path: mp + ".clientKey", kind: kindString, str: &m.ClientKey},
					field{path: mp + ".clientCert", kind: kindString, str: &m.ClientCert})
			}
		}
	}
	for i := range s.Host.Files {
		out = append(out, field{path: fmt.Sprintf("spec.host.files[%d].content", i), kind: kindContent, file: &s.Host.Files[i]})
	}
	return out
}

// ownerOnly reports whether a file mode string gives no access to group
// and others, the mark of a secret file (as pkg/redact reads it).
func ownerOnly(mode string) bool {
	m, err := strconv.ParseUint(mode, 8, 32)
	return err == nil && m&0o077 == 0
}
