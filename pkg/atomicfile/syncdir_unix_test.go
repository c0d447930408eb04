//go:build !windows

package atomicfile

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSyncDirDoesNotWaitOnAFIFO: a directory's name swapped for a FIFO
// before the fsync after a rename is refused at once (O_DIRECTORY), not
// opened for reading, which waits for a writer for ever.
func TestSyncDirDoesNotWaitOnAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "dir")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan struct{})
	go func() {
		SyncDir(fifo)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("SyncDir(%s), a FIFO, still waiting after 20s", fifo)
	}
}
