package phases

import (
	"os"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
)

// unseal opens the run's sealed secrets once (inputs-check, or the first
// phase that needs them when inputs-check ran in an earlier run or is not
// run): it puts each secret where the spec expects it, in memory, keeps
// the CA set for the PKI import, and tells the redactor every plaintext.
// Without a sealed document it does nothing. Its errors carry their class:
// VerificationFailed for an identity that does not open the envelope (or
// any changed byte of it), InvalidSpec for a malformed envelope.
func unseal(d *Data) (*sealspec.Unsealed, error) {
	if d.Sealed == nil || d.unsealed != nil {
		return d.unsealed, nil
	}
	u, err := sealspec.Unseal(d.Config, d.Sealed, sealspec.UnsealOptions{IdentityFile: IdentityPath(d), NodeName: NodeName(d.Config), ClearSpec: d.SpecDoc})
	if err != nil {
		return nil, err
	}
	d.unsealed, d.sealedPKI = u, u.PKIFiles
	if d.Host != nil {
		// What the envelope put back may be written now.
		for _, p := range u.Items {
			delete(d.Host.Withheld, p)
		}
	}
	if d.AddSecrets != nil {
		var secrets []string
		for _, f := range machineadm.SecretFields(d.Config) {
			switch {
			case f.Source != nil && f.Source.Value != "":
				secrets = append(secrets, f.Source.Value)
			case f.Value != nil && *f.Value != "" && f.Kind != machineadm.SecretKindText && f.Kind != machineadm.SecretKindCADir:
				secrets = append(secrets, *f.Value)
			}
		}
		for name, data := range u.PKIFiles {
			if strings.HasSuffix(name, ".key") {
				secrets = append(secrets, string(data))
			}
		}
		d.AddSecrets(secrets...)
	}
	return u, nil
}

// OpenSealed opens the run's sealed secrets (as inputs-check does) before
// any phase runs, so that no phase of any command — prepare, one
// `bootstrap phase`, a resumed bootstrap whose inputs-check completed in
// an earlier run — meets a spec whose sealed places are still empty. It
// does nothing without a sealed document or when the envelope is already
// open. Its errors are unseal's, with their class (VerificationFailed,
// InvalidSpec); the caller refuses the run.
func OpenSealed(d *Data) error {
	_, err := unseal(d)
	return err
}

// IdentityPath is the identity file a sealed spec is opened with: Identity
// (default sealspec.DefaultIdentityFile) below Root.
func IdentityPath(d *Data) string {
	identity := d.Identity
	if identity == "" {
		identity = sealspec.DefaultIdentityFile
	}
	return hostPathOrRoot(d, identity)
}

// NodeName is the Node name the envelope must be sealed for:
// spec.node.name, or the lower-cased host name as kubeadm chooses it.
func NodeName(cfg *machineadm.MachineBootstrapConfig) string {
	if cfg.Spec.Node.Name != "" {
		return cfg.Spec.Node.Name
	}
	host, _ := os.Hostname()
	return strings.ToLower(host)
}
