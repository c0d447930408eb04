package seal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// DefaultIdentityFile is where a machine keeps its identity when the
// envelope names none: baked into the image or written by `machineadm
// keygen` at image-build time.
const DefaultIdentityFile = "/etc/machineadm/identity"

// MaxIdentityFileBytes bounds an identity file (64 KiB).
const MaxIdentityFileBytes = 64 << 10

// IdentityFileError refuses an identity file that is missing, not a
// regular file, readable by others than its owner, owned by another user
// or not parseable. Its class is errclass.VerificationFailed: the machine
// cannot prove it holds the key. Messages never include the file's content.
type IdentityFileError struct {
	// Path of the identity file.
	Path string
	// Err is the cause.
	Err error
}

func (e *IdentityFileError) Error() string { return "identity file " + e.Path + ": " + e.Err.Error() }
func (e *IdentityFileError) Unwrap() error { return e.Err }

func identityErr(path string, err error) error {
	return errclass.New(errclass.VerificationFailed,
		"Place this machine's identity (from `machineadm keygen`) at the identity path, mode 0600, owned by root.",
		&IdentityFileError{Path: path, Err: err})
}

// LoadIdentityFile reads the identities in path: one per line (hpke,
// age or tpm2 identity lines, as `machineadm keygen` writes them); empty
// lines and lines starting with "#" are ignored. The file must be a
// regular file (symbolic links are not followed), of mode exactly 0600,
// owned by root or by the user running machineadm (on the machine that is
// root), and at most MaxIdentityFileBytes; anything else is refused with an
// *IdentityFileError, line numbers but never content in its message. A path
// that is itself an identity line (LooksLikeIdentity) is refused without
// being quoted.
func LoadIdentityFile(path string) ([]Identity, error) {
	if LooksLikeIdentity(path) || LooksLikeIdentity(filepath.Base(path)) {
		// An identity line given as the path (--identity "$(cat identity)"),
		// maybe joined to a root directory, is the secret itself: never
		// echo it.
		return nil, identityErr("<redacted>", errors.New("the path given is an identity line (a secret key), not a file name: give the path of the file that holds it"))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, identityErr(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, identityErr(path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, identityErr(path, fmt.Errorf("not a regular file (%s)", fi.Mode().Type()))
	}
	if err := checkAccess(fi); err != nil {
		return nil, identityErr(path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxIdentityFileBytes+1))
	if err != nil {
		return nil, identityErr(path, err)
	}
	if len(data) > MaxIdentityFileBytes {
		return nil, identityErr(path, fmt.Errorf("larger than %d bytes", MaxIdentityFileBytes))
	}
	ids, err := ParseIdentities(data)
	clear(data)
	if err != nil {
		return nil, identityErr(path, err)
	}
	return ids, nil
}

// ParseIdentities parses identity lines (see LoadIdentityFile). It fails
// when a line is not an identity or the text holds none.
func ParseIdentities(data []byte) ([]Identity, error) {
	var ids []Identity
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxIdentityFileBytes)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, err := ParseIdentity(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, errors.New("holds no identity")
	}
	return ids, nil
}

// WriteIdentityFile creates path with mode 0600 holding the identity line
// and a comment with its recipient string. It never replaces an existing
// file (fs.ErrExist).
func WriteIdentityFile(path, identityLine, recipient string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists; machineadm keygen never replaces an identity", path)
		}
		return err
	}
	content := "# machineadm identity; keep it secret (mode 0600).\n# recipient: " + recipient + "\n" + identityLine + "\n"
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Chmod(0o600); err != nil { // the umask may have narrowed it; make it exact
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
