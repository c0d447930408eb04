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
// would take the mode and owner too) made since it was examined, not
// the file fi described (another put in its place since), or one the
// change takes writing away from someone (revokesWrite). On Linux the
// descriptor is O_PATH (openMeta), which needs no read permission: a run
// that is not root changes its own file of mode 0200 too.
func setInPlace(hostPath string, fi fs.FileInfo, mode fs.FileMode, uid, gid int) (replace bool, err error) {
	f, err := openMeta(hostPath)
	if err != nil {
		return false, err
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return false, err
	}
	switch {
	case ofi.Mode().IsRegular() && (fileLinks(ofi) > 1 || fi != nil && !os.SameFile(fi, ofi) || revokesWrite(ofi, mode, uid, gid)):
		return true, nil
	case ofi.Mode()&fs.ModeSymlink != 0 || fi != nil && !os.SameFile(fi, ofi) || fi == nil && !ofi.Mode().IsRegular():
		return false, fmt.Errorf("%s changed while machineadm set its mode and owner: it is no longer the file examined", hostPath)
	}
	if err := chownMeta(f, uid, gid); err != nil {
		return false, err
	}
	return false, chmodMeta(f, mode)
}

// revokesWrite says whether giving the regular file fi describes mode
// and owner uid:gid takes writing away from someone who has it, or who
// can give it to themselves as its owner (root aside): a descriptor they
// opened for writing before the change would still write to the file
// after it, were it made in place (a world-writable /etc/sudoers.d file
// made 0440, then written through a descriptor its writer kept open).
// Such a file is replaced instead, and the descriptor writes to the old
// one.
func revokesWrite(fi fs.FileInfo, mode fs.FileMode, uid, gid int) bool {
	ou, og := fileOwner(fi)
	om := fi.Mode().Perm()
	switch {
	case ou != 0 && ou != uid:
		return true
	case om&0o002 != 0 && mode&0o002 == 0:
		return true
	case om&0o020 != 0 && mode&0o002 == 0 && (og != gid || mode&0o020 == 0):
		return true
	}
	return false
}
