//go:build !windows

package phases

import (
	"io/fs"
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
