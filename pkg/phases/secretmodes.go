package phases

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// secretModeWarnings names every secret file of the spec that group or
// others may read: a SecretSource's file (spec.join.token.file,
// spec.join.certificateKey.file, a bootstrap token's file) and each
// private key (*.key, also under etcd/) in the CA directory
// spec.controlPlane.pki.dir. One line per file, with the field, the
// machine path, the mode and the fix ("chmod 0600 FILE"); never the
// content. A file that is missing or not a regular file is left to the
// readers, which refuse it.
//
// A warning, not a refusal, as validation treats a host.files[] private
// key with a wide mode: the file was delivered by someone else before
// machineadm ran, and refusing would stop a join whose secret is only as
// exposed as it already was.
func secretModeWarnings(d *Data) []string {
	var out []string
	check := func(field, machinePath string) {
		fi, err := os.Lstat(hostPathOrRoot(d, machinePath))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
			return
		}
		out = append(out, fmt.Sprintf("%s: %s is mode %04o: group or others can read this secret; make it owner-only (chmod 0600 %s)", field, machinePath, fi.Mode().Perm(), machinePath))
	}
	for _, f := range machineadm.SecretFields(d.Config) {
		switch {
		case f.Kind == machineadm.SecretKindSource && f.Source != nil && f.Source.File != "":
			check(f.Path+".file", f.Source.File)
		case f.Kind == machineadm.SecretKindCADir && f.Value != nil && *f.Value != "" && d.sealedPKI == nil:
			for _, sub := range []string{"", "etcd"} {
				dir := path.Join(*f.Value, sub)
				hd, err := d.host().Path(dir)
				if err != nil {
					continue
				}
				keys, _ := filepath.Glob(filepath.Join(hd, "*.key"))
				slices.Sort(keys)
				for _, k := range keys {
					check(f.Path, path.Join(dir, filepath.Base(k)))
				}
			}
		}
	}
	return out
}
