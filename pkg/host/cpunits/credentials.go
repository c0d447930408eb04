package cpunits

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/machineadm/machineadm/pkg/host/files"
)

// StampCredentials returns c with its CredentialStamp computed from the
// files of its credentials under root: the hex SHA-256 over each file's
// machine path and the SHA-256 of its content, or "absent". The content's
// digest, not its size and modification time: a renewal of the same size
// within the file system's timestamp granularity, or a copy that keeps
// the mtime (cp -p, rsync -t), changes no time. The stamp, which a dry
// run prints in the unit's diff, is a one-way digest of digests, so it
// shows nothing of a key. A rewritten file (kubeadm's
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
		sum, err := fileDigest(hp)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(h, "%s\x00absent\x00", cr.Path)
		case err != nil:
			return c, fmt.Errorf("credential %s: %w", cr.ID, err)
		default:
			fmt.Fprintf(h, "%s\x00%x\x00", cr.Path, sum)
		}
	}
	c.CredentialStamp = hex.EncodeToString(h.Sum(nil))
	return c, nil
}

// maxCredentialDigest bounds how much of a credential's file the stamp
// reads: far above what systemd loads as one credential (1 MiB), so a
// file that large is refused by systemd, not hashed whole.
const maxCredentialDigest = 16 << 20

// fileDigest is the SHA-256 of the content of the host file hp (at most
// maxCredentialDigest bytes, then its size). A file that is not regular
// (a device, a FIFO, which would block or never end) is digested by its
// type alone and never opened for reading.
func fileDigest(hp string) ([]byte, error) {
	fi, err := os.Stat(hp)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	if !fi.Mode().IsRegular() {
		fmt.Fprintf(h, "not a regular file: %v", fi.Mode().Type())
		return h.Sum(nil), nil
	}
	// Examined again as it is opened (files.OpenRegular): one swapped for a
	// FIFO since would block the read for ever.
	f, fi, err := files.OpenRegular(hp, hp, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := io.Copy(h, io.LimitReader(f, maxCredentialDigest))
	if err != nil {
		return nil, err
	}
	if n == maxCredentialDigest {
		fmt.Fprintf(h, "\x00size %d", fi.Size())
	}
	return h.Sum(nil), nil
}

// credentialStampPrefix and loadCredentialPrefix are the lines of a
// rendered unit (Render) that carry its credentials' stamp and files.
const (
	credentialStampPrefix = "# Credential files stamp: "
	loadCredentialPrefix  = "LoadCredential="
)

// CredentialsStale says whether the installed unit of component (name
// without ".service") under root carries a credential stamp that is not
// the stamp of its credential files now (StampCredentials over the
// LoadCredential= files it names, in its order): a file was rewritten
// since the unit was (a certificate renewed by hand, or by a run that
// stopped before it replaced the unit), and the running process, which
// systemd handed a copy at its start, does not read it yet. It reads the
// installed unit only: false for a unit that is not installed, names no
// credential or carries no stamp.
func CredentialsStale(root, component string) (bool, error) {
	unit := path.Join(UnitDir, component+".service")
	content, err := InstalledUnit(root, component+".service")
	if err != nil || content == nil {
		return false, err
	}
	var stamp string
	var c Component
	for _, l := range strings.Split(string(content), "\n") {
		if s, ok := strings.CutPrefix(l, credentialStampPrefix); ok {
			stamp = strings.TrimSpace(s)
		}
		if s, ok := strings.CutPrefix(l, loadCredentialPrefix); ok {
			id, p, ok := strings.Cut(s, ":")
			if !ok {
				return false, fmt.Errorf("%s: %q is not LoadCredential=ID:PATH", unit, l)
			}
			c.Credentials = append(c.Credentials, Credential{ID: id, Path: strings.ReplaceAll(p, "%%", "%")})
		}
	}
	if stamp == "" || len(c.Credentials) == 0 {
		return false, nil
	}
	now, err := StampCredentials(root, c)
	if err != nil {
		return false, fmt.Errorf("%s: %w", unit, err)
	}
	return now.CredentialStamp != stamp, nil
}
