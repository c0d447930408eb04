//go:build !windows

package files

import (
	"io/fs"
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
