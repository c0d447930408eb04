package files

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/machineadm/machineadm/internal/testfifo"
)

// unprivileged is the user asUser runs as (nobody).
const unprivileged = 65534

// asUser runs f as uid:gid, without capabilities, when the test runs as
// root: on a thread of its own whose effective ids alone are changed
// (the kernel keeps credentials per thread; the thread is thrown away
// afterwards, never handed back to the runtime). Not root: f runs as
// the test's user, who has no capabilities either.
func asUser(t *testing.T, uid, gid int, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		f()
		return
	}
	done := make(chan string)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(gid), ^uintptr(0)); e != 0 {
			done <- "setresgid: " + e.Error()
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
			done <- "setresuid: " + e.Error()
			return
		}
		f()
		done <- ""
	}()
	if msg := <-done; msg != "" {
		t.Fatal(msg)
	}
}

// TestSetOwnerModeNotRootWithoutRead: a run that is not root (prepare
// --root DIR as a user) changes the mode of its own file or directory
// that it may not read (0200, 0300) in place, as chmod(2) would: the
// descriptor the change goes through needs no read permission.
func TestSetOwnerModeNotRootWithoutRead(t *testing.T) {
	t.Run("fchmodat2", testSetOwnerModeNotRootWithoutRead)
	// A kernel before 6.6 (no fchmodat2): x/sys/unix says EOPNOTSUPP.
	t.Run("proc", func(t *testing.T) {
		defer func(f func(int, string, uint32, int) error) { fchmodat = f }(fchmodat)
		fchmodat = func(dirfd int, path string, mode uint32, flags int) error {
			if flags != 0 {
				return unix.EOPNOTSUPP
			}
			return unix.Fchmodat(dirfd, path, mode, flags)
		}
		testSetOwnerModeNotRootWithoutRead(t)
	})
	// A seccomp filter older than fchmodat2 (Docker's default profile
	// before 25, systemd-nspawn's) refuses it with EPERM.
	t.Run("seccomp", func(t *testing.T) {
		defer func(f func(int, string, uint32, int) error) { fchmodat = f }(fchmodat)
		fchmodat = func(dirfd int, path string, mode uint32, flags int) error {
			if flags != 0 {
				return unix.EPERM
			}
			return unix.Fchmodat(dirfd, path, mode, flags)
		}
		testSetOwnerModeNotRootWithoutRead(t)
	})
}

func testSetOwnerModeNotRootWithoutRead(t *testing.T) {
	uid, gid := os.Geteuid(), os.Getegid()
	dir, err := os.MkdirTemp("", "files-notroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if uid == 0 {
		uid, gid = unprivileged, unprivileged
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name      string
		from, to  os.FileMode
		directory bool
	}{{"file", 0o200, 0o600, false}, {"directory", 0o300, 0o700, true}} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			if c.directory {
				err = os.Mkdir(p, 0o700)
			} else {
				err = os.WriteFile(p, []byte("a\n"), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, c.from); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			asUser(t, uid, gid, func() { err = SetOwnerMode(p, fi, c.to, uid, gid) })
			if err != nil {
				t.Fatalf("SetOwnerMode as %d:%d: %v", uid, gid, err)
			}
			nfi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if nfi.Mode().Perm() != c.to || !os.SameFile(fi, nfi) {
				t.Errorf("%s: %04o, same file %v; want %04o in place", p, nfi.Mode().Perm(), os.SameFile(fi, nfi), c.to)
			}
		})
	}
}

// withoutProc runs f where /proc is not procfs (an empty tmpfs), as in
// a chroot or at early boot without /proc: on a thread of its own in a
// mount namespace of its own (the thread is thrown away afterwards).
// The test is skipped where that cannot be made (not root).
func withoutProc(t *testing.T, f func()) { fakeProc(t, "", f) }

// fakeProc is withoutProc with, when planted is not "", a /proc that
// only looks like procfs: /proc/self/fd/N a symlink to planted for
// every descriptor N below 1024 (a chroot's /proc a local user made).
func fakeProc(t *testing.T, planted string, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount namespace")
	}
	done := make(chan string)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			done <- "skip: unshare: " + err.Error()
			return
		}
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- "mount --make-rprivate /: " + err.Error()
			return
		}
		if err := unix.Mount("tmpfs", "/proc", "tmpfs", 0, ""); err != nil {
			done <- "mount tmpfs /proc: " + err.Error()
			return
		}
		if planted != "" {
			if err := os.MkdirAll("/proc/self/fd", 0o755); err != nil {
				done <- err.Error()
				return
			}
			for n := range 1024 {
				if err := os.Symlink(planted, "/proc/self/fd/"+strconv.Itoa(n)); err != nil {
					done <- err.Error()
					return
				}
			}
		}
		f()
		done <- ""
	}()
	switch msg := <-done; {
	case len(msg) > 5 && msg[:5] == "skip:":
		t.Skip(msg)
	case msg != "":
		t.Fatal(msg)
	}
}

// TestSetOwnerModeWithoutProc: on a kernel without fchmodat2 (before
// 6.6) and without /proc (a chroot, early boot), a mode is still set in
// place, on a file and on a directory; it was "chmod P: no such file or
// directory", naming a file that exists.
func TestSetOwnerModeWithoutProc(t *testing.T) {
	defer func(f func(int, string, uint32, int) error) { fchmodat = f }(fchmodat)
	fchmodat = func(dirfd int, path string, mode uint32, flags int) error {
		if flags != 0 {
			return unix.EOPNOTSUPP
		}
		return unix.Fchmodat(dirfd, path, mode, flags)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name      string
		directory bool
	}{{"file", false}, {"directory", true}} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			var err error
			if c.directory {
				err = os.Mkdir(p, 0o700)
			} else {
				err = os.WriteFile(p, []byte("a\n"), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			withoutProc(t, func() {
				if _, serr := os.Stat("/proc/self/fd"); serr == nil {
					err = errors.New("/proc/self/fd is still there")
					return
				}
				err = SetOwnerMode(p, fi, 0o750, os.Geteuid(), os.Getegid())
			})
			if err != nil {
				t.Fatalf("SetOwnerMode without /proc: %v", err)
			}
			nfi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if nfi.Mode().Perm() != 0o750 || !os.SameFile(fi, nfi) {
				t.Errorf("%s: %04o, same file %v; want 0750 in place", p, nfi.Mode().Perm(), os.SameFile(fi, nfi))
			}
		})
	}
}

// TestMetaFakeProc: where /proc is a directory that only looks like
// procfs (a chroot's, /proc/self/fd/N a symlink to /etc/shadow), a mode
// set in place on a kernel without fchmodat2 goes to the file, not to
// what /proc/self/fd/N names: that was made 0750, the file left as it
// was, and no error said so. Nor is a staged file reopened or linked
// through it (reopenReadOnly, linkUnnamed), which would have read, or
// linked into place, the planted file.
func TestMetaFakeProc(t *testing.T) {
	defer func(f func(int, string, uint32, int) error) { fchmodat = f }(fchmodat)
	fchmodat = func(dirfd int, path string, mode uint32, flags int) error {
		if flags != 0 {
			return unix.EOPNOTSUPP
		}
		return unix.Fchmodat(dirfd, path, mode, flags)
	}
	dir := t.TempDir()
	shadow := filepath.Join(dir, "shadow")
	if err := os.WriteFile(shadow, []byte("root:$6$secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "conf")
	if err := os.WriteFile(p, []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	var rerr, lerr error
	var reopened *os.File
	fakeProc(t, shadow, func() {
		err = SetOwnerMode(p, fi, 0o750, os.Geteuid(), os.Getegid())
		u, uerr := openUnnamed(dir)
		if uerr != nil {
			rerr = uerr
			return
		}
		defer u.Close()
		reopened, rerr = reopenReadOnly(u)
		lerr = linkUnnamed(u, filepath.Join(dir, "linked"))
	})
	if err != nil {
		t.Errorf("SetOwnerMode: %v", err)
	}
	for path, want := range map[string]os.FileMode{p: 0o750, shadow: 0o600} {
		if nfi, err := os.Lstat(path); err != nil || nfi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want %04o", path, nfi.Mode(), err, want)
		}
	}
	if reopened != nil {
		reopened.Close()
	}
	if rerr == nil || lerr == nil {
		t.Errorf("reopenReadOnly: %v, linkUnnamed: %v; want both refused", rerr, lerr)
	}
	if _, err := os.Lstat(filepath.Join(dir, "linked")); err == nil {
		t.Error("something was linked into place through the fake /proc")
	}
}

// TestChmodWithoutProcSaysWhy: where fchmodat2 is refused with EPERM (a
// seccomp filter older than it) and /proc is not mounted, a mode that
// cannot be set in place (a FIFO, which is not opened for it) fails
// with an error saying fchmodat2 was refused: it said the kernel had
// no fchmodat2, which is not so, and misleads whoever upgrades it.
func TestChmodWithoutProcSaysWhy(t *testing.T) {
	defer func(f func(int, string, uint32, int) error) { fchmodat = f }(fchmodat)
	fchmodat = func(dirfd int, path string, mode uint32, flags int) error {
		if flags != 0 {
			return unix.EPERM
		}
		return unix.Fchmodat(dirfd, path, mode, flags)
	}
	p := filepath.Join(t.TempDir(), "fifo")
	testfifo.Make(t, p)
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	withoutProc(t, func() { err = SetOwnerMode(p, fi, 0o640, os.Geteuid(), os.Getegid()) })
	if err == nil || !strings.Contains(err.Error(), "fchmodat2 was refused") || strings.Contains(err.Error(), "has no fchmodat2") || !strings.Contains(err.Error(), p) {
		t.Errorf("SetOwnerMode of a FIFO, fchmodat2 refused, no /proc: %v; want an error naming it and saying fchmodat2 was refused", err)
	}
}
