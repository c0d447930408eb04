package files

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// WideSecretFile is a secret file of a spec that group or others may read.
type WideSecretFile struct {
	// Field is the spec field that names the file:
	// "spec.join.token.file", or "spec.controlPlane.pki.dir" for a CA key.
	Field string
	// Path is the file's machine path, "/etc/machineadm/pki/ca.key".
	Path string
	// Mode is the file's permission bits.
	Mode fs.FileMode
}

// String is the warning for a person: the field, the file, its mode and
// the fix; never the content.
func (w WideSecretFile) String() string {
	return fmt.Sprintf("%s: %s is mode %04o: group or others can read this secret; make it owner-only (chmod 0600 %s)", w.Field, w.Path, w.Mode, w.Path)
}

// WideSecretFiles finds every secret file of cfg that group or others may
// read: a SecretSource's file (spec.join.token.file,
// spec.join.certificateKey.file, a bootstrap token's file) and each
// private key (*.key, also under etcd/) in the CA directory
// spec.controlPlane.pki.dir unless skipCADir (a CA set that came sealed).
// hostPath maps a machine path to where it is on this host (the root
// prefix, Resolve). A file that is missing or not a regular file is left
// to the readers, which refuse it. Both inputs-check (pkg/phases) and
// `config validate` (pkg/cmd/configcmd) warn with it; it reads only file
// modes, never content.
//
// A warning, not a refusal, as validation treats a host.files[] private
// key with a wide mode: the file was delivered by someone else before
// machineadm ran, and refusing would stop a join whose secret is only as
// exposed as it already was.
func WideSecretFiles(cfg *machineadm.MachineBootstrapConfig, hostPath func(string) (string, error), skipCADir bool) []WideSecretFile {
	var out []WideSecretFile
	check := func(field, machinePath string) {
		hp, err := hostPath(machinePath)
		if err != nil {
			return
		}
		fi, err := os.Lstat(hp)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
			return
		}
		out = append(out, WideSecretFile{Field: field, Path: machinePath, Mode: fi.Mode().Perm()})
	}
	for _, f := range machineadm.SecretFields(cfg) {
		switch {
		case f.Kind == machineadm.SecretKindSource && f.Source != nil && f.Source.File != "":
			check(f.Path+".file", f.Source.File)
		case f.Kind == machineadm.SecretKindCADir && f.Value != nil && *f.Value != "" && !skipCADir:
			for _, sub := range []string{"", "etcd"} {
				dir := path.Join(*f.Value, sub)
				hd, err := hostPath(dir)
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
