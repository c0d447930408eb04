//go:build !windows

package phases

import (
	"io/fs"
	"os"
	"syscall"
)

// linkCount is the number of hard links of the file fi describes (1 when
// the platform does not say).
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// keepOwner gives dst the owner of the file fi describes, when that is not
// this process's user and group (a backup of a file another account owns,
// put back).
func keepOwner(fi fs.FileInfo, dst string) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid()) {
		return os.Lchown(dst, int(st.Uid), int(st.Gid))
	}
	return nil
}
