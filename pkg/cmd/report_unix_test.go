//go:build unix

package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/session"
)

// `machineadm report` of a FIFO, a device or an oversized file is bad input
// (exit 2) and returns: it neither blocks on the FIFO nor reads /dev/zero
// until memory runs out.
func TestReportCommandNonRegularOrHugeExit2(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "report.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte(`{"a":"`+strings.Repeat("x", 5<<20)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", huge} {
		type result struct {
			code   int
			errOut string
		}
		done := make(chan result, 1)
		go func() {
			code, _, errOut := run(t, "", "report", path)
			done <- result{code, errOut}
		}()
		select {
		case r := <-done:
			if r.code != session.ExitBadInput || !strings.Contains(r.errOut, "Error:") {
				t.Errorf("report %s: exit %d, want 2; stderr %s", path, r.code, r.errOut)
			}
		case <-time.After(20 * time.Second):
			if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			t.Fatalf("report %s did not return", path)
		}
	}
}
