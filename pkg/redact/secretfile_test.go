//go:build !windows

package redact

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestReadSecretFileRefusesNonRegular: a FIFO or a device named as a
// secret file is refused at once (never blocks, never exhausts memory);
// an oversized file is refused; a regular file is read.
func TestReadSecretFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadSecretFile(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO secret file blocked")
	}
	if _, err := ReadSecretFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxSecretFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSecretFile(big); err == nil {
		t.Error("oversized secret file accepted")
	}
	ok := filepath.Join(dir, "token")
	os.WriteFile(ok, []byte("abcdef.0123456789abcdef\n"), 0o600)
	if b, err := ReadSecretFile(ok); err != nil || string(b) != "abcdef.0123456789abcdef\n" {
		t.Errorf("regular file: %q, %v", b, err)
	}
}

// TestSpecSecretsSkipsFIFO: the redactor, built before any phase runs,
// must not block on a secret file that is a FIFO.
func TestSpecSecretsSkipsFIFO(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "token"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &machineadm.MachineBootstrapConfig{}
	cfg.Spec.Join = &machineadm.Join{Token: machineadm.SecretSource{File: "/token"}}
	done := make(chan []string, 1)
	go func() { done <- SpecSecrets(cfg, root) }()
	select {
	case got := <-done:
		if len(got) != 0 {
			t.Errorf("SpecSecrets = %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SpecSecrets blocked on a FIFO secret file")
	}
}
