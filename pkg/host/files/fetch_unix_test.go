//go:build !windows

package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testfifo"
)

// TestFetchFileURLNotRegular: a file:// source that is a FIFO is refused
// with an error naming it, at once: it was opened for reading, which
// blocks until a writer comes (for ever, the run with it). A device is
// refused too.
func TestFetchFileURLNotRegular(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	testfifo.Make(t, fifo)
	sum := strings.Repeat("0", 64)
	for _, p := range []string{"/fifo", "/null"} {
		if p == "/null" {
			if err := syscall.Mknod(filepath.Join(root, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Logf("mknod: %v", err)
				continue
			}
		}
		done := make(chan error, 1)
		go func() {
			b, err := Fetch(context.Background(), nil, root, "file://"+p, sum)
			b.Close()
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v; want it refused, not a regular file", p, err)
			}
		case <-time.After(30 * time.Second):
			// Let the blocked open go (a writer comes), then fail.
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			<-done
			t.Fatalf("%s: Fetch was still blocked after 30 s", p)
		}
	}
}
