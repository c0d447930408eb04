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

// A FIFO at the installed unit's name is refused by Backup with an
// error naming it, not read for the binary it runs (which blocked for
// ever).
func TestBackupFIFOUnit(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	unit := filepath.Join(root, c.UnitPath())
	if err := os.Remove(unit); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(unit, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := cpunits.Backup(root, "", c)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), c.UnitPath()+" is not a regular file") {
			t.Errorf("Backup: %v; want an error naming the FIFO", err)
		}
	case <-time.After(30 * time.Second):
		if f, err := os.OpenFile(unit, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Backup did not return: it read the FIFO at the unit's name")
	}
}

// A backup on another file system than the binary (no hard link across
// them) copies the binary from the file it opened, and a rollback puts
// that copy back.
func TestBackupCopiedAcrossFileSystems(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	backups := filepath.Join(root, "var/lib/backups")
	if err := os.MkdirAll(backups, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := mountTmpfs(backups); err != nil {
		t.Skip("cannot mount a tmpfs here:", err)
	}
	t.Cleanup(func() { unmount(backups) })
	if _, err := cpunits.Backup(root, "/var/lib/backups", c); err != nil {
		t.Fatal(err)
	}
	stored := filepath.Join(backups, c.Name, "binary")
	fi, err := os.Stat(stored)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(stored); err != nil || string(b) != "old" || fi.Mode().Perm() != 0o755 {
		t.Fatalf("stored binary %q (%v), %v; want a copy of %q, 0755", b, fi.Mode(), err, "old")
	}
	writeHost(t, root, "/usr/local/bin/kube-apiserver", "new, broken")
	checks := 0
	res, err := cpunits.Replace(t.Context(), c, cpunits.ReplaceOptions{Root: root, BackupDir: "/var/lib/backups", Manager: &service.Recorder{}, Healthy: func(context.Context) error {
		if checks++; checks > 1 {
			return nil
		}
		return errors.New("livez: connection refused")
	}})
	if err == nil || !res.RolledBack {
		t.Fatalf("Replace: %+v, %v; want a rollback", res, err)
	}
	if got := readHost(t, root, "/usr/local/bin/kube-apiserver"); got != "old" {
		t.Errorf("binary after the rollback %q, want %q", got, "old")
	}
}
