//go:build unix

package report

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConsoleWriterDoesNotBlock uses a FIFO whose reader never reads and
// whose buffer is full: the write must give up within the timeout and the
// next device must still get the summary.
func TestConsoleWriterDoesNotBlock(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "dev"), 0o755)
	fifo := filepath.Join(root, "dev/console")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	fill, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fill.Close()
	fill.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	chunk := make([]byte, 4096)
	for {
		if _, err := fill.Write(chunk); err != nil {
			break // the pipe is full
		}
	}
	serial := filepath.Join(root, "dev/ttyS0")
	os.WriteFile(serial, nil, 0o600)

	w := &ConsoleWriter{Root: root, Devices: []string{"/dev/console"}, Timeout: 300 * time.Millisecond}
	start := time.Now()
	err = w.Write(t.Context(), fixtureFailed())
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("want a timeout, got %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("blocked console took %v", d)
	}
	w.Devices = []string{"/dev/console", "/dev/ttyS0"}
	if err := w.Write(t.Context(), fixtureFailed()); err != nil {
		t.Fatalf("the next device must take the summary: %v", err)
	}
	if data, _ := os.ReadFile(serial); len(data) == 0 {
		t.Error("nothing written to the second device")
	}
}
