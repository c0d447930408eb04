//go:build !windows

package atomicfile

import (
	"os"
	"syscall"
)

// SyncDir fsyncs the directory dir, best effort (some file systems cannot
// sync a directory): after a rename in it, to make the rename durable.
// dir is opened as a directory only (O_DIRECTORY) and without waiting
// (O_NONBLOCK): a name swapped for a FIFO since is refused, not waited on
// for a writer for ever.
func SyncDir(dir string) {
	if d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
