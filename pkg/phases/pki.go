package phases

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/kubeadm"
	"github.com/machineadm/machineadm/pkg/report"
)

// importPKI copies the shared CA set found in src (kubeadm's layout, as
// written by `machineadm pki init`) into kubeadm's certificate directory
// dst: private keys 0600, certificates 0644, directories 0700. ca.crt and
// ca.key are required; other files are copied when present (kubeadm
// creates the missing ones on Init). A destination file with other content
// is never overwritten: that would split the cluster's trust.
func importPKI(src, dst string) (bool, error) {
	hint := "deliver the CA set from `machineadm pki init` to spec.controlPlane.pki.dir"
	for _, req := range []string{"ca.crt", "ca.key"} {
		if _, err := os.Stat(filepath.Join(src, req)); err != nil {
			return false, report.NewError(report.ClassPayloadUnavailable, hint, fmt.Errorf("spec.controlPlane.pki.dir: %w", err))
		}
	}
	changed := false
	for _, name := range kubeadm.CASet {
		data, err := os.ReadFile(filepath.Join(src, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return changed, report.NewError(report.ClassPayloadUnavailable, hint, err)
		}
		target := filepath.Join(dst, name)
		if old, err := os.ReadFile(target); err == nil {
			if bytes.Equal(old, data) {
				continue
			}
			return changed, report.NewError(report.ClassHostPreparationFailed,
				"this node already has a different CA; reset it (kubeadm reset) or point pki.dir at the cluster's CA set",
				fmt.Errorf("%s exists with other content than %s", target, filepath.Join(src, name)))
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return changed, report.NewError(report.ClassHostPreparationFailed, "", err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".key") {
			mode = 0o600
		}
		if err := atomicfile.WriteFile(target, data, mode); err != nil {
			return changed, report.NewError(report.ClassHostPreparationFailed, "", err)
		}
		changed = true
	}
	return changed, nil
}
