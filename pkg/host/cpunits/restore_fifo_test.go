//go:build !windows

package cpunits_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/service"
)

// A FIFO found at a name a rollback restores (planted in the binary's
// directory by a user who may write there) is not opened to be read,
// which would block the rollback for ever with the unit down: it is
// replaced by the restored file.
func TestReplaceRollbackOverFIFO(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	if _, err := cpunits.Backup(root, "", c); err != nil {
		t.Fatal(err)
	}
	writeHost(t, root, "/usr/local/bin/kube-apiserver", "new, broken")
	bin := filepath.Join(root, "usr/local/bin/kube-apiserver")
	checks := 0
	opts := cpunits.ReplaceOptions{Root: root, Manager: &service.Recorder{}, Healthy: func(context.Context) error {
		if checks++; checks > 1 {
			return nil
		}
		if err := os.Remove(bin); err != nil {
			return err
		}
		if err := syscall.Mkfifo(bin, 0o644); err != nil {
			return err
		}
		return errors.New("livez: connection refused")
	}}
	done := make(chan error, 1)
	go func() {
		res, err := cpunits.Replace(t.Context(), c, opts)
		if err == nil || !res.RolledBack {
			err = errors.New("no rollback")
		} else {
			err = nil
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		// Unblock the reader so the test binary can exit.
		if f, err := os.OpenFile(bin, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("the rollback did not return: it opened the FIFO at the binary's name")
	}
	if fi, err := os.Lstat(bin); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("%s after the rollback: %v, %v; want the restored file", bin, fi, err)
	}
	if got := readHost(t, root, "/usr/local/bin/kube-apiserver"); got != "old" {
		t.Errorf("binary after the rollback %q, want %q", got, "old")
	}
}

// A FIFO at the binary the installed unit runs is refused by Backup with
// an error naming it, not read (which would block for ever).
func TestBackupFIFOBinary(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	bin := filepath.Join(root, "usr/local/bin/kube-apiserver")
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(bin, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := cpunits.Backup(root, "", c)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "/usr/local/bin/kube-apiserver is not a regular file") {
			t.Errorf("Backup: %v; want an error naming the FIFO", err)
		}
	case <-time.After(30 * time.Second):
		if f, err := os.OpenFile(bin, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Backup did not return: it read the FIFO at the binary's name")
	}
}
