package cpunits_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/service"
)

// What is not a regular file at the binary's name (a FIFO, a device: a
// symlink to /dev/watchdog arms it when opened) is refused without being
// opened for reading: examined through an O_PATH descriptor, which runs
// no open of a driver. A FIFO shows it: a writer waiting in open(2) for
// a reader is released when the name is opened for reading, even
// without blocking (O_NONBLOCK, which fileSum used).
func TestReplaceNeverOpensFIFOBinary(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	if _, err := cpunits.Backup(root, "", c); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "usr/local/bin/kube-apiserver")
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(bin, 0o644); err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{})
	go func() {
		// Blocks until someone opens the FIFO for reading.
		if f, err := os.OpenFile(bin, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		close(opened)
	}()
	defer func() {
		// Release the writer (a reader that does not block).
		if f, err := os.OpenFile(bin, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-opened
			f.Close()
		}
	}()
	// Let the writer reach open(2).
	time.Sleep(100 * time.Millisecond)
	_, err := cpunits.Replace(t.Context(), c, cpunits.ReplaceOptions{Root: root, Manager: &service.Recorder{}, Healthy: healthy})
	if err == nil || !strings.Contains(err.Error(), "/usr/local/bin/kube-apiserver is not a regular file") {
		t.Errorf("Replace: %v, want an error naming the FIFO", err)
	}
	select {
	case <-opened:
		t.Error("the FIFO at the binary's name was opened for reading")
	case <-time.After(3 * time.Second):
	}
}
