//go:build !windows

package cpunits

import "syscall"

// sumFlags are fileSum's flags beyond O_RDONLY: a FIFO at the path does
// not block open(2) waiting for a writer (fileSum then refuses it; on a
// regular file O_NONBLOCK changes nothing).
const sumFlags = syscall.O_NONBLOCK
