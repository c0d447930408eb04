package machineadm

import "slices"

// CASetEncryptionKeyFile is the file name, in a CA set's directory
// (spec.controlPlane.pki.dir), of the cluster's encryption-at-rest key:
// base64 of 32 random bytes, written by `machineadm pki init` or
// `machineadm pki encryption-key`.
const CASetEncryptionKeyFile = "encryption.key"

// WantsCASetEncryptionKey says whether cfg is a control plane under a
// compliance profile that configures no encryption at rest itself (no
// apiServer.encryption, no --encryption-provider-config): the one
// the session's encryption default gives the CA set's key, or refuses
// without it.
func WantsCASetEncryptionKey(cfg *MachineBootstrapConfig) bool {
	s := &cfg.Spec
	return s.Security != nil && s.Security.Profile != "" && ConfiguresNoEncryption(cfg)
}

// ConfiguresNoEncryption says whether cfg is a Linux control plane whose
// spec configures no encryption at rest (no apiServer.encryption, no
// --encryption-provider-config).
func ConfiguresNoEncryption(cfg *MachineBootstrapConfig) bool {
	s := &cfg.Spec
	if s.Role != RoleControlPlane || s.ControlPlane == nil || s.OS == OSWindows {
		return false
	}
	a := &s.ControlPlane.APIServer
	return a.Encryption == nil && !slices.ContainsFunc(a.ExtraArgs, func(x Arg) bool { return x.Name == "encryption-provider-config" })
}
