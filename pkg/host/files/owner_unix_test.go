//go:build !windows

package files

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testfifo"
)

// TestLoadIDsNotRegularRefused: a root's /etc/passwd or /etc/group that
// is not a regular file (a FIFO in an image under --root DIR) is refused
// with an error naming it, at once: it was read with os.ReadFile, whose
// open blocks until a writer comes (for ever, the run with it), and on
// a device acts on it.
func TestLoadIDsNotRegularRefused(t *testing.T) {
	for _, name := range []string{"passwd", "group"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"passwd", "group"} {
				if f == name {
					testfifo.Make(t, filepath.Join(root, "etc", f))
				} else if err := os.WriteFile(filepath.Join(root, "etc", f), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() {
				_, err := LoadIDs(root)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "/etc/"+name) || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("LoadIDs with a FIFO at /etc/%s: %v; want it refused, not a regular file", name, err)
				}
			case <-time.After(30 * time.Second):
				if w, err := os.OpenFile(filepath.Join(root, "etc", name), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				<-done
				t.Fatalf("LoadIDs was still blocked on the FIFO at /etc/%s after 30 s", name)
			}
		})
	}
}
