//go:build unix

package seal

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
)

// An identity path that is a FIFO is refused (not a regular file) instead
// of blocking the boot until someone writes to it.
func TestLoadIdentityFileRefusesFIFOWithoutBlocking(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "identity")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := LoadIdentityFile(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if c, _ := errclass.Of(err); c != errclass.VerificationFailed || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("LoadIdentityFile(FIFO) = %v (class %s), want VerificationFailed: not a regular file", err, c)
		}
	case <-time.After(20 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatal("LoadIdentityFile(FIFO) blocked")
	}
}
