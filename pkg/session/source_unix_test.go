//go:build unix

package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A spec path that is a FIFO, a device or a directory is refused as a
// usage error without blocking: opening a FIFO that has no writer would
// wait forever, and the boot with it.
func TestReadSpecRefusesNonRegularWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "spec.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, path := range []string{fifo, "/dev/zero", dir} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadSpec(nil, path)
			done <- err
		}()
		select {
		case err := <-done:
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("ReadSpec(%s) = %v, want a *UsageError saying it is not a regular file", path, err)
			}
		case <-time.After(20 * time.Second):
			// Unblock the reader so the test process can end.
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("ReadSpec(%s) blocked", path)
		}
	}
}
