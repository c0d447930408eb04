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
//
// Which fields those are comes from the spec-wide secret walk:
// machineadm.SecretFields when sealing (the fields that hold or point at
// a secret), machineadm.SecretSlots when unsealing (the places a secret
// may go, set or not, since sealing emptied them). URLs with credentials
// and free text are not sealed; render refuses them inline.
package sealspec

import "path"

// PKIDirItem is the item that holds the CA set: the path of the walk's
// CADir field, spec.controlPlane.pki.dir.
const PKIDirItem = "spec.controlPlane.pki.dir"

// PKIFiles are the files of spec.controlPlane.pki.dir that seal takes, in
// kubeadm's layout as `machineadm pki init` writes them
// (k8s.io/kubernetes/cmd/kubeadm/app/constants), and the cluster's
// encryption-at-rest key that `pki init` writes beside them
// (EncryptionKeyFile).
var PKIFiles = []string{
	"ca.crt", "ca.key",
	"front-proxy-ca.crt", "front-proxy-ca.key",
	path.Join("etcd", "ca.crt"), path.Join("etcd", "ca.key"),
	"sa.key", "sa.pub",
	EncryptionKeyFile,
}

// EncryptionKeyFile is the CA set's encryption-at-rest key
// (pki.EncryptionKeyFile): sealed with the CA set, so that a sealed
// control plane under a compliance profile finds the cluster's key.
const EncryptionKeyFile = "encryption.key"
