package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/machineadm/machineadm/internal/testfifo"
)

// TestFetchFileURLNotRegularNotOpened: a file:// source that is not a
// regular file (a FIFO, reached directly or through a symlink Resolve
// follows) is refused without being opened at all: its open released a
// writer waiting on the FIFO, and on a device acts on it (a symlink to
// /dev/watchdog armed the watchdog, a tty became the run's controlling
// terminal) before the check refused it. The kernel reports every open
// to inotify (IN_OPEN), an O_PATH descriptor's excepted.
func TestFetchFileURLNotRegularNotOpened(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	testfifo.Make(t, fifo)
	if err := os.Symlink("/fifo", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, fifo, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/fifo", "/link"} {
		b, err := Fetch(context.Background(), nil, root, "file://"+p, strings.Repeat("0", 64))
		b.Close()
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v; want it refused, not a regular file", p, err)
		}
		if n, _ := unix.Read(in, make([]byte, 4096)); n > 0 {
			t.Errorf("%s: the FIFO was opened before it was refused", p)
		}
	}
}

// TestFetchFileURLWithoutProc: without /proc (a chroot, early boot) a
// regular file:// source is still read, through its name opened again.
func TestFetchFileURLWithoutProc(t *testing.T) {
	root := t.TempDir()
	content := []byte("payload\n")
	if err := os.WriteFile(filepath.Join(root, "src"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	var b *Blob
	var err error
	withoutProc(t, func() {
		b, err = Fetch(context.Background(), nil, root, "file:///src", hex.EncodeToString(sum[:]))
	})
	if err != nil {
		t.Fatalf("Fetch without /proc: %v", err)
	}
	defer b.Close()
	if b.Size() != int64(len(content)) {
		t.Errorf("size %d, want %d", b.Size(), len(content))
	}
}

// TestOpenExaminedSwappedNotOpened: a destination examined as a regular
// file (Lstat) and swapped before it is read (for its diff, its digest,
// a copy with a new owner) for a FIFO is refused without the FIFO being
// opened: it was opened (without blocking) and only then found not to be
// the file examined, which released a writer waiting on it, and a device
// swapped in (an image's, under --root DIR) was acted on by its open
// (/dev/watchdog armed, a tty made the run's controlling terminal).
func TestOpenExaminedSwappedNotOpened(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "kubelet")
	if err := os.WriteFile(p, []byte("content\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	testfifo.Make(t, fifo)
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, fifo, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, p); err != nil {
		t.Fatal(err)
	}
	if f, err := openExamined(p, fi); err == nil {
		f.Close()
		t.Fatalf("%s swapped for a FIFO: opened, want refused", p)
	}
	if n, _ := unix.Read(in, make([]byte, 4096)); n > 0 {
		t.Errorf("%s swapped for a FIFO: the FIFO was opened before it was refused", p)
	}
}

// TestOpenRegularNonBlocking: the descriptor OpenRegular returns does not
// block, reopened through /proc/self/fd as by its name: a regular file
// whose read waits for data (/proc/kmsg, a tracefs trace_pipe: a
// file:// source, a unit's binary or credential named there) fails with
// EAGAIN instead of holding the run for ever. Its reopen through /proc
// lost O_NONBLOCK, which cpunits' copy of it had.
func TestOpenRegularNonBlocking(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(how string) {
		for _, follow := range []bool{false, true} {
			f, _, err := OpenRegular(p, p, follow)
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			rc, err := f.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var fl int
			if cerr := rc.Control(func(fd uintptr) { fl, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); cerr != nil {
				t.Fatal(cerr)
			}
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if fl&unix.O_NONBLOCK == 0 {
				t.Errorf("%s (follow %v): the descriptor blocks (flags %#o), want O_NONBLOCK", how, follow, fl)
			}
		}
	}
	check("through /proc/self/fd")
	withoutProc(t, func() { check("by its name") })
}
