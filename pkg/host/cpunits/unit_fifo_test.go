//go:build !windows

package cpunits_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// A credential path that is not a regular file (a FIFO an extraArgs entry
// names, a device) is stamped without being opened: opening a FIFO with
// no writer, or reading a device, would never end.
func TestStampCredentialsSpecialFile(t *testing.T) {
	root := t.TempDir()
	c := apiserver()
	c.Command = append(append([]string{}, c.Command...), "--client-ca-file=/etc/kubernetes/pki/ca.crt")
	c.Credentials = []cpunits.Credential{{ID: "client-ca-file", Path: "/etc/kubernetes/pki/ca.crt"}}
	hp := filepath.Join(root, "etc/kubernetes/pki/ca.crt")
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(hp, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		s, err := cpunits.StampCredentials(root, c)
		if err == nil && s.CredentialStamp == "" {
			err = errors.New("no stamp")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(30 * time.Second):
		// Unblock the reader so the test binary can exit.
		if f, err := os.OpenFile(hp, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("stamping a FIFO credential did not return")
	}
}
