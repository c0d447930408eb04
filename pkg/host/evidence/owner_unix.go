//go:build !windows

package evidence

import (
	"io/fs"
	"syscall"
)

// fileOwner is a file's uid and gid.
func fileOwner(fi fs.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}
