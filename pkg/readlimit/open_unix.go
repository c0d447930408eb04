//go:build unix

package readlimit

import (
	"os"
	"syscall"
)

// open opens path for reading with O_NONBLOCK, so that opening a FIFO
// without a writer returns at once instead of waiting for one, and with
// O_NOCTTY, so that a terminal at path (/dev/ttyS0) does not become the
// controlling terminal of a run that leads its session without one (a
// systemd service), whose hangup would then send it SIGHUP.
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}
