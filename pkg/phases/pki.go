package phases

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/kubeadm/pki"
)

// pkiSource is where a CA set is read from: spec.controlPlane.pki.dir
// (files.Dir) or the envelope of a sealed spec (sealedFiles).
type pkiSource interface {
	ReadFile(p string) ([]byte, error)
	Path(p string) (string, error)
}

// sealedFiles is a CA set opened from a sealed spec, by name relative to
// pki.dir; it lives in memory only.
type sealedFiles map[string][]byte

// ReadFile returns the file named by the machine path "/" + name.
func (s sealedFiles) ReadFile(p string) ([]byte, error) {
	if data, ok := s[strings.TrimPrefix(p, "/")]; ok {
		return data, nil
	}
	return nil, &fs.PathError{Op: "open", Path: "sealed:spec.controlPlane.pki.dir" + p, Err: fs.ErrNotExist}
}

// Path names the item for messages.
func (s sealedFiles) Path(p string) (string, error) {
	return "sealed:spec.controlPlane.pki.dir" + p, nil
}

// importPKI copies the shared CA set found in src (kubeadm's layout, as
// written by `machineadm pki init`) into kubeadm's certificate directory
// dst: private keys 0600, certificates 0644, directories 0700. ca.crt and
// ca.key are required; other files are copied when present (kubeadm
// creates the missing ones on Init). A destination file with other content
// is never overwritten: that would split the cluster's trust.
func importPKI(src pkiSource, dst files.Dir) (bool, error) {
	hint := "deliver the CA set from `machineadm pki init` to spec.controlPlane.pki.dir"
	for _, req := range []string{"ca.crt", "ca.key"} {
		if _, err := src.ReadFile("/" + req); err != nil {
			return false, errclass.New(errclass.PayloadUnavailable, hint, fmt.Errorf("spec.controlPlane.pki.dir: %w", err))
		}
	}
	changed := false
	for _, name := range pki.CASet {
		data, err := src.ReadFile("/" + name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return changed, errclass.New(errclass.PayloadUnavailable, hint, err)
		}
		if old, err := dst.ReadFile("/" + name); err == nil {
			if bytes.Equal(old, data) {
				continue
			}
			target, _ := dst.Path("/" + name)
			from, _ := src.Path("/" + name)
			return changed, errclass.New(errclass.HostPreparationFailed,
				"this node already has a different CA; reset it (kubeadm reset) or point pki.dir at the cluster's CA set",
				fmt.Errorf("%s exists with other content than %s", target, from))
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".key") {
			mode = 0o600
		}
		if _, err := dst.WriteFile("/"+name, data, mode); err != nil {
			return changed, errclass.New(errclass.HostPreparationFailed, "", err)
		}
		changed = true
	}
	return changed, nil
}
