package controller

import "context"

// SecretFile is one secret the machine spec refers to by path (a token
// file, the certificate key file, a file of the CA set in pki.dir).
type SecretFile struct {
	// Path is the absolute path the spec names.
	Path string
	// Data is the secret's content.
	Data []byte
}

// SealRequest is what the controller asks a Sealer to seal.
type SealRequest struct {
	// Spec is the machine spec document (YAML). The controller's own
	// secrets (token, certificate key, CA set) are referenced by file
	// path, their values in Secrets; the values taken from the Secrets
	// the config refers to are inline (owner-only file contents, registry
	// and mirror client keys with their certificates), where sealing finds
	// them as it finds any inline secret. Both kinds must be sealed.
	Spec []byte
	// Secrets are the values of the files the spec refers to.
	Secrets []SecretFile
	// ClusterName and MachineName bind the envelope to this machine.
	ClusterName, MachineName string
	// Recipients are the MachineadmConfig's spec.recipients.
	Recipients []string
	// OS is the spec's spec.os: "" or "linux", or "windows", where
	// sealing finds a path without a drive on the system drive C (see
	// sealspec.MachinePath).
	OS string
}

// Sealer turns a spec plus its secret files into one self-contained
// document in which every secret is sealed to the recipients, ready to be
// rendered as bootstrap data. An implementation must never return any
// secret in the clear. Errors about recipients should wrap
// ErrInvalidRecipient so the condition can say the config is at fault.
type Sealer interface {
	Seal(ctx context.Context, req SealRequest) ([]byte, error)
}

// ErrInvalidRecipient marks a Seal error caused by a bad recipient string.
var ErrInvalidRecipient = errInvalidRecipient{}

type errInvalidRecipient struct{}

func (errInvalidRecipient) Error() string { return "invalid recipient" }
