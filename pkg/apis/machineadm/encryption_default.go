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

// CASetEncryptionKeyName is the name of the key in the encryption
// configuration a profile's default makes from the CA set's key
// (CASetEncryption); the API server stores it with each value it
// encrypts.
const CASetEncryptionKeyName = "machineadm-ca-set"

// CASetEncryptionResources are the resources a profile's default
// encryption configuration encrypts: Secrets, which CIS 1.2.27/1.2.28
// name. ConfigMaps are left in the clear: they are meant for
// non-confidential data, and encrypting them costs every read of
// kube-system's many ConfigMaps a decryption.
var CASetEncryptionResources = []string{"secrets"}

// CASetEncryption is the encryption at rest a compliance profile's
// default gives a control plane that configures none
// (WantsCASetEncryptionKey): CASetEncryptionResources encrypted by an
// aescbc provider with key (the base64 of 32 bytes from the CA set's
// CASetEncryptionKeyFile) named CASetEncryptionKeyName, and identity
// second to read values written before. The caller checks the key's
// shape.
func CASetEncryption(key string) *Encryption {
	return &Encryption{Resources: []EncryptionResource{{
		Resources: slices.Clone(CASetEncryptionResources),
		Providers: []EncryptionProvider{
			{AESCBC: &EncryptionKeys{Keys: []EncryptionKey{{Name: CASetEncryptionKeyName, Secret: SecretSource{Value: key}}}}},
			{Identity: &IdentityProvider{}},
		},
	}}}
}
