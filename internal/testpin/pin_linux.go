// Package testpin makes a file that os.Remove cannot remove, even for
// root, for tests of the failure paths of code that removes files.
package testpin

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// fsImmutableFL is the inode flag FS_IMMUTABLE_FL of linux/fs.h (chattr
// +i): the file can be neither written, renamed nor unlinked, whatever
// the caller's privileges.
const fsImmutableFL = 0x10

// Undeletable makes path (an existing regular file) impossible to remove
// until the test ends: as root it sets the file's immutable flag (which
// needs CAP_LINUX_IMMUTABLE and a file system that has the flag, such as
// ext4, xfs or btrfs; the test is skipped where it does not), otherwise it
// makes the file's directory read-only. The test's cleanup undoes it, so
// that t.TempDir can remove the file; call it after creating the
// directory with t.TempDir.
func Undeletable(t testing.TB, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		dir := filepath.Dir(path)
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Skipf("%s: no inode flags here (%v)", path, err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsImmutableFL)); err != nil {
		t.Skipf("%s: cannot set the immutable flag (%v)", path, err)
	}
	t.Cleanup(func() {
		f, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags&^fsImmutableFL)); err != nil {
			t.Errorf("%s: clearing the immutable flag: %v", path, err)
		}
	})
}
