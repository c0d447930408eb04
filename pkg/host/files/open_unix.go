//go:build !windows

package files

import "syscall"

// examineFlags are openExamined's flags beyond O_RDONLY: a path swapped
// after its Lstat for a symlink is not opened through (ELOOP), and one
// swapped for a FIFO does not block the run in open(2) waiting for a
// writer (O_NONBLOCK has no effect on a regular file's reads).
const examineFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// nofollowFlag is examineFlags' part that keeps a symlink from being
// followed (OpenRegular with follow takes it out).
const nofollowFlag = syscall.O_NOFOLLOW
