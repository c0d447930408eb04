package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// What is at the lock's path and is not a regular file is refused without
// being opened: opening a special file can act (a FIFO's open wakes a
// process waiting at its other end; a device's open may start it, a
// watchdog's arms it, a terminal's may become the run's controlling
// terminal), and prepare --root runs as root on an image that may come from
// anywhere. inotify sees every open of the path (IN_OPEN); none may come.
// Each is refused with exit 1, the path named, and "remove it".
func TestLockNeverOpensSpecialFiles(t *testing.T) {
	for _, kind := range []string{"fifo", "directory", "socket", "device"} {
		t.Run(kind, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "work")
			if err := os.MkdirAll(work, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(work, LockFileName)
			var err error
			switch kind {
			case "fifo":
				err = unix.Mkfifo(path, 0o600)
			case "directory":
				err = os.Mkdir(path, 0o700)
			case "socket":
				var fd int
				if fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0); err == nil {
					defer unix.Close(fd)
					err = unix.Bind(fd, &unix.SockaddrUnix{Name: path})
				}
			case "device":
				// /dev/null's numbers: harmless if it were opened.
				err = unix.Mknod(path, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3)))
				if errors.Is(err, syscall.EPERM) {
					t.Skip("mknod needs CAP_MKNOD")
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
			if err != nil {
				t.Skipf("inotify: %v", err)
			}
			defer unix.Close(in)
			if _, err := unix.InotifyAddWatch(in, path, unix.IN_OPEN); err != nil {
				t.Fatal(err)
			}
			for _, create := range []bool{true, false} {
				l, err := acquireLock(work, create, LockInfo{PID: os.Getpid(), Command: "machineadm prepare"})
				if l != nil {
					l.release()
				}
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				if ExitCode(err) != ExitFailed || !errors.Is(err, errNotOwnLock) || !strings.Contains(msg, path) || !strings.Contains(msg, "remove it and run again") {
					t.Errorf("create=%v: %v; want exit 1 naming %s, not machineadm's lock file, remove it", create, err, path)
				}
			}
			buf := make([]byte, 4096)
			if n, err := unix.Read(in, buf); n > 0 {
				t.Errorf("the %s at the lock's path was opened (%d bytes of inotify events)", kind, n)
			} else if !errors.Is(err, unix.EAGAIN) {
				t.Errorf("reading inotify: %v", err)
			}
		})
	}
}
