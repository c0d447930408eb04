package controller

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
)

// SpecSealer seals with machineadm's SealedSecrets envelope
// (pkg/seal/sealspec, the same code as `machineadm seal`). The envelope is
// bound to the Cluster's name and to any machine name (seal.AnyMachine):
// Cluster API does not know a Machine's host name before it boots.
//
// The secrets are handed to sealspec in memory (SealOptions.Files), by
// the machine paths the spec names: they are never written to a file.
type SpecSealer struct {
	// TempDir is ignored: sealing no longer writes the secrets to a
	// private directory. Deprecated: kept so that callers that set it
	// compile; set nothing.
	TempDir string
}

// Seal implements Sealer.
func (s SpecSealer) Seal(_ context.Context, req SealRequest) ([]byte, error) {
	if len(req.Recipients) == 0 {
		return nil, fmt.Errorf("%w: no recipients", ErrInvalidRecipient)
	}
	for _, r := range req.Recipients {
		if _, err := seal.ParseRecipient(r); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidRecipient, err)
		}
	}
	files := make(map[string][]byte, len(req.Secrets))
	for _, f := range req.Secrets {
		if !path.IsAbs(f.Path) || strings.Contains(f.Path, "..") {
			return nil, fmt.Errorf("secret path %q is not a clean absolute path", f.Path)
		}
		files[f.Path] = f.Data
	}
	out, err := sealspec.SealSpec(req.Spec, sealspec.SealOptions{
		Recipients:  req.Recipients,
		MachineName: seal.AnyMachine,
		Files:       files,
	})
	if err != nil {
		return nil, fmt.Errorf("sealing: %w", err)
	}
	return out.File, nil
}
