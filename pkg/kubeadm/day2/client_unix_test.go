//go:build unix

package day2

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClientRefusesAFIFOAndReadsRelativePaths: the drain's credential is
// read only when it is a regular file (a FIFO blocked the upgrade
// forever), and a kubeconfig's relative file references still resolve
// against its own directory.
func TestClientRefusesAFIFOAndReadsRelativePaths(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Client(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Client(FIFO) = %v, want a not-a-regular-file error", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Client(FIFO) still blocked after a minute")
	}
	if _, err := Client(dir); err == nil {
		t.Errorf("Client(directory) = nil error")
	}

	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.crt}
users:
- name: u
  user: {token: "t"}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Client(kc)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "ca.crt")) {
		t.Errorf("a relative certificate-authority was not resolved against the kubeconfig's directory: %v", err)
	}
}
