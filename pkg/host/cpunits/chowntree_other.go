//go:build !linux

package cpunits

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/machineadm/machineadm/pkg/host/files"
)

// chownTree gives every entry below dir the owner and returns how many
// changed. A regular file with other names (hard links) is refused, as
// on Linux. (The Systemd control plane runs on Linux only, where the
// tree is walked through descriptors.)
func chownTree(dir string, uid, gid int, dryRun bool) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if u, g := files.Owner(fi); u == uid && g == gid {
			return nil
		}
		n++
		if fi.Mode().IsRegular() && files.Links(fi) > 1 {
			return fmt.Errorf("%s has %d names (hard links): machineadm does not give a file with other names an owner; remove the other names, or this one", p, files.Links(fi))
		}
		if dryRun {
			return nil
		}
		return os.Lchown(p, uid, gid)
	})
	return n, err
}
