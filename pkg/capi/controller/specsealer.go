package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
)

// SpecSealer seals with machineadm's SealedSecrets envelope
// (pkg/seal/sealspec, the same code as `machineadm seal`). The envelope is
// bound to the Cluster's name and to any machine name (seal.AnyMachine):
// Cluster API does not know a Machine's host name before it boots.
//
// sealspec reads the secrets from files, so Seal writes them for the
// moment of the call into a private directory (0700, files 0600) under
// TempDir and removes it before returning; the Deployment mounts a
// memory-backed emptyDir there, so they never reach a disk.
type SpecSealer struct {
	// TempDir is the parent of the private directory. Default os.TempDir().
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
	root, err := os.MkdirTemp(s.TempDir, "machineadm-seal-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	for _, f := range req.Secrets {
		if !filepath.IsAbs(f.Path) || strings.Contains(f.Path, "..") {
			return nil, fmt.Errorf("secret path %q is not a clean absolute path", f.Path)
		}
		p, err := sealspec.MachinePath(root, machineadm.OS(req.OS), f.Path)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			return nil, err
		}
	}
	out, err := sealspec.SealSpec(req.Spec, sealspec.SealOptions{
		Recipients:  req.Recipients,
		MachineName: seal.AnyMachine,
		Root:        root,
	})
	if err != nil {
		return nil, fmt.Errorf("sealing: %w", err)
	}
	return out.File, nil
}
