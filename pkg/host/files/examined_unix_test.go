//go:build !windows

package files

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOpenExaminedSwapped: a path examined as a regular file (Lstat) and
// swapped before it is opened, for a FIFO with no writer or for a symlink,
// is refused, and promptly: open(2) of a FIFO would otherwise wait for a
// writer for ever, holding the run (and its lock), and a symlink would be
// opened through (a device: opening some has effects).
func TestOpenExaminedSwapped(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "kubelet")
	if err := os.WriteFile(p, []byte("content\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, viaLink := range []bool{false, true} {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		swap := fifo
		if viaLink {
			swap = filepath.Join(dir, "link")
			if err := os.Symlink(fifo, swap); err != nil {
				t.Fatal(err)
			}
		}
		q := filepath.Join(dir, "q")
		if err := os.Link(p, q); err != nil {
			t.Fatal(err)
		}
		qfi, err := os.Lstat(q)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(swap, q); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			f, err := openExamined(q, qfi)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s swapped for %s: opened, want refused", q, filepath.Base(swap))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s swapped for %s: openExamined still blocked after 10 s", q, filepath.Base(swap))
		}
		for _, n := range []string{q, fifo} {
			if err := os.Remove(n); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	// The file examined itself still opens.
	f, err := openExamined(p, fi)
	if err != nil {
		t.Fatalf("openExamined of the file examined: %v", err)
	}
	f.Close()
}
