//go:build unix

package report

import (
	"os"
	"syscall"
)

// DefaultConsoleDevices are the console devices ConsoleWriter tries: the
// kernel console (which the boot command line's console= points at) and
// the first serial port.
var DefaultConsoleDevices = []string{"/dev/console", "/dev/ttyS0"}

// openConsole opens a console for writing without making it the
// controlling terminal and without blocking on a line that is not ready.
func openConsole(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
}
