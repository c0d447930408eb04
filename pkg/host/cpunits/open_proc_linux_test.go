package cpunits_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// A /proc that is not procfs (a chroot's, which its maker filled) is
// not trusted to reopen what files.OpenRegular examined: /proc/self/fd/N
// there may be a symlink to a FIFO (whose waiting writer its open
// releases) or to /dev/watchdog (which its open arms). The name is
// reopened instead, and a backup is taken; it opened the planted FIFO,
// then failed ("changed while machineadm opened it").
func TestBackupFakeProcNotFollowed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount namespace")
	}
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{})
	go func() {
		// Blocks until someone opens the FIFO for reading.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		close(opened)
	}()
	defer func() {
		if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-opened
			f.Close()
		}
	}()
	time.Sleep(100 * time.Millisecond) // let the writer reach open(2)
	done := make(chan string)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			done <- "skip: unshare: " + err.Error()
			return
		}
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- "skip: mount --make-rprivate /: " + err.Error()
			return
		}
		if err := unix.Mount("tmpfs", "/proc", "tmpfs", 0, ""); err != nil {
			done <- "skip: mount tmpfs /proc: " + err.Error()
			return
		}
		if err := os.MkdirAll("/proc/self/fd", 0o755); err != nil {
			done <- err.Error()
			return
		}
		for n := range 1024 {
			if err := os.Symlink(fifo, "/proc/self/fd/"+strconv.Itoa(n)); err != nil {
				done <- err.Error()
				return
			}
		}
		if _, err := cpunits.Backup(root, "", c); err != nil {
			done <- "Backup: " + err.Error()
			return
		}
		done <- ""
	}()
	switch msg := <-done; {
	case len(msg) > 5 && msg[:5] == "skip:":
		t.Skip(msg)
	case msg != "":
		t.Error(msg)
	}
	select {
	case <-opened:
		t.Error("the FIFO a fake /proc/self/fd/N named was opened")
	case <-time.After(3 * time.Second):
	}
}
