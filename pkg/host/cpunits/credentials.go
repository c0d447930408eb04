package cpunits

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/machineadm/machineadm/pkg/host/files"
)

// StampCredentials returns c with its CredentialStamp computed from the
// files of its credentials under root: the hex SHA-256 of each file's
// machine path, size and modification time (nanoseconds), or "absent".
// Contents are never read, so the stamp, which a dry run prints in the
// unit's diff, tells nothing about a key. A rewritten file (kubeadm's
// certificate renewal, the apiserver-config step) changes the stamp and
// so the unit, which Install and Replace then restart: systemd copies the
// credentials only when the unit starts. Without credentials the stamp is
// "".
func StampCredentials(root string, c Component) (Component, error) {
	c.CredentialStamp = ""
	if len(c.Credentials) == 0 {
		return c, nil
	}
	h := sha256.New()
	for _, cr := range c.Credentials {
		hp, err := files.Resolve(root, cr.Path)
		if err != nil {
			return c, err
		}
		fi, err := os.Stat(hp)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(h, "%s\x00absent\x00", cr.Path)
		case err != nil:
			return c, fmt.Errorf("credential %s: %w", cr.ID, err)
		default:
			fmt.Fprintf(h, "%s\x00%d\x00%d\x00", cr.Path, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	c.CredentialStamp = hex.EncodeToString(h.Sum(nil))
	return c, nil
}
