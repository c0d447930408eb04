//go:build !windows

package files

import (
	"io/fs"
	"syscall"
)

// fileOwner returns the numeric owner and group of a file.
func fileOwner(fi fs.FileInfo) (uid, gid int) {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid), int(sys.Gid)
	}
	return 0, 0
}
