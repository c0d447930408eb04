//go:build unix

package readlimit

import (
	"os"
	"syscall"
)

// open opens path for reading with O_NONBLOCK, so that opening a FIFO
// without a writer returns at once instead of waiting for one.
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
