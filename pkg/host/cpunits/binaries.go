package cpunits

import (
	"errors"
	"fmt"
	"os"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/files"
)

// CheckBinaries checks spec.controlPlane.binaries of a Systemd-runtime
// spec for inputs-check: each path that spec.host.files does not deliver
// (those are verified by their sha256 when fetched) must be an executable
// regular file under root. The error lists every bad binary by field
// path. A spec of another runtime passes.
func CheckBinaries(root string, s *machineadm.MachineBootstrapSpec) error {
	cp := s.ControlPlane
	if cp == nil || cp.Runtime != machineadm.RuntimeSystemd || cp.Binaries == nil {
		return nil
	}
	delivered := map[string]bool{}
	for _, f := range s.Host.Files {
		delivered[f.Path] = true
	}
	b := cp.Binaries
	var errs []error
	for _, bin := range []struct{ field, path string }{
		{"etcd", b.Etcd}, {"kubeAPIServer", b.KubeAPIServer},
		{"kubeControllerManager", b.KubeControllerManager}, {"kubeScheduler", b.KubeScheduler},
	} {
		if bin.path == "" || delivered[bin.path] {
			continue
		}
		if err := checkExecutable(root, bin.path); err != nil {
			errs = append(errs, fmt.Errorf("spec.controlPlane.binaries.%s: %w (install it in the image or deliver it with spec.host.files and a sha256)", bin.field, err))
		}
	}
	return errors.Join(errs...)
}

func checkExecutable(root, p string) error {
	hp, err := files.Resolve(root, p)
	if err != nil {
		return err
	}
	fi, err := os.Stat(hp)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable regular file (%s)", p, fi.Mode())
	}
	return nil
}
