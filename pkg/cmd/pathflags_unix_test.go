//go:build unix

package cmd

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFileFlagsRefuseAFIFO: a --kubeconfig or --config that is a FIFO (or
// a directory) is a usage error naming the flag, exit code 2; it was
// opened and read, and the command blocked until someone wrote to it.
func TestFileFlagsRefuseAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	work := recordSpec(t, upgradeSpec("v1.36.3", "cp1", "30"))
	cases := []struct {
		name string
		run  func() (int, string, string)
		flag string
	}{
		{"certs --kubeconfig fifo", func() (int, string, string) {
			return run(t, "", "certs", "check-expiration", "--cert-dir", filepath.Join(dir, "pki"), "--kubeconfig", fifo)
		}, "--kubeconfig"},
		{"certs --config fifo", func() (int, string, string) {
			return run(t, "", "certs", "check-expiration", "--cert-dir", filepath.Join(dir, "pki"), "--config", fifo)
		}, "--config"},
		{"certs --config dir", func() (int, string, string) {
			return run(t, "", "certs", "check-expiration", "--cert-dir", filepath.Join(dir, "pki"), "--config", dir)
		}, "--config"},
		{"upgrade --kubeconfig fifo", func() (int, string, string) {
			return upgradeCLI(t, work, upgradeSpec("v1.37.2", "cp1", "30"), "--kubeconfig", fifo)
		}, "--kubeconfig"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			type res struct {
				code     int
				out, err string
			}
			done := make(chan res, 1)
			go func() {
				code, out, errOut := c.run()
				done <- res{code, out, errOut}
			}()
			select {
			case r := <-done:
				if r.code != 2 || !strings.Contains(r.err, c.flag) || !strings.Contains(r.err, "regular file") {
					t.Errorf("exit %d, want 2 naming %s\n%s\n%s", r.code, c.flag, r.out, r.err)
				}
			case <-time.After(60 * time.Second):
				// The blocked goroutine stays blocked on the FIFO; the
				// test fails rather than hangs.
				t.Fatalf("%s: still blocked after a minute (reading the FIFO)", c.name)
			}
		})
	}
}
