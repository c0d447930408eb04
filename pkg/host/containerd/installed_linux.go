//go:build linux

package containerd

import (
	"fmt"
	"os"
	"syscall"
)

// fileID is the Linux part of Installed.ID: device, inode and change time.
func fileID(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" dev=%d ino=%d ctime=%d.%09d", st.Dev, st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
}
