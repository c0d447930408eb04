//go:build !linux && !windows

package cpunits

import "syscall"

// nonblock keeps open(2) of a FIFO from waiting for a writer.
const nonblock = syscall.O_NONBLOCK
