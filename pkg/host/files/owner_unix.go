//go:build !windows

package files

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ownersApply: files have numeric owners that Apply sets.
const ownersApply = true

// fileOwner returns the numeric owner and group of a file.
func fileOwner(fi fs.FileInfo) (uid, gid int) {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid), int(sys.Gid)
	}
	return 0, 0
}

// effectiveMode is the part of the permission bits the OS keeps: all of
// them.
func effectiveMode(m fs.FileMode) fs.FileMode { return m.Perm() }

// fileLinks is the number of names (hard links) of the file fi
// describes.
func fileLinks(fi fs.FileInfo) int {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(sys.Nlink)
	}
	return 1
}

// setInPlace gives the file at hostPath owner uid:gid and mode in place
// (keeping content and mtime), through a descriptor of it: a symlink
// swapped in for it since it was examined is refused rather than
// followed (out of the root, to /etc/shadow), as is anything but a
// regular file or the file fi (os.Lstat; nil: not known) described.
// replace says, with nothing changed, that the file must be replaced
// instead: it is a regular file with other names (hard links, which
// would take the mode and owner too) made since it was examined, or not
// the file fi described (another put in its place since).
func setInPlace(hostPath string, fi fs.FileInfo, mode fs.FileMode, uid, gid int) (replace bool, err error) {
	f, err := os.OpenFile(hostPath, os.O_RDONLY|examineFlags, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return false, err
	}
	switch {
	case ofi.Mode().IsRegular() && (fileLinks(ofi) > 1 || fi != nil && !os.SameFile(fi, ofi)):
		return true, nil
	case fi != nil && !os.SameFile(fi, ofi) || fi == nil && !ofi.Mode().IsRegular():
		return false, fmt.Errorf("%s changed while machineadm set its mode and owner: it is no longer the file examined", hostPath)
	}
	if err := f.Chown(uid, gid); err != nil {
		return false, err
	}
	return false, f.Chmod(mode)
}
