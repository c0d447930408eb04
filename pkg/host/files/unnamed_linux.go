package files

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed creates a file with no name in dir (O_TMPFILE, mode 0600):
// it uses dir's file system, is invisible in every directory, and is
// freed when it is closed or the process dies, until linkUnnamed gives it
// a name. It fails where the file system has no O_TMPFILE (some network
// and FUSE file systems, Linux before 3.11) or dir is missing or not
// writable.
// dir is reached by descriptor (openDir), as a write to it is.
func openUnnamed(dir string) (*os.File, error) {
	d, err := openDir(dir, 0, false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fd, err := unix.Openat(dirFD(d), ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open unnamed file in", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, "(unnamed)")), nil
}

// roomFor says whether dir's file system has size bytes free for an
// unprivileged writer (statfs f_bavail): content staged there must not
// take the last of it, nor root's reserve, from the services writing
// there. A file system that cannot be asked says yes (openUnnamed, and
// stagingWriter on a full one, decide then).
func roomFor(dir string, size int64) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Bsize <= 0 {
		return true
	}
	return uint64(size) <= st.Bavail*uint64(st.Bsize)
}

// linkUnnamedAt gives f, opened by openUnnamed, the name name in the
// directory dirfd, which must not exist (the link fails with fs.ErrExist
// then), through /proc/self/fd: linkat's AT_EMPTY_PATH would need
// CAP_DAC_READ_SEARCH.
func linkUnnamedAt(f *os.File, dirfd int, name string) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		var proc string
		if proc, lerr = procSelfFD(int(fd)); lerr == nil {
			lerr = unix.Linkat(unix.AT_FDCWD, proc, dirfd, name, unix.AT_SYMLINK_FOLLOW)
		}
	}); err != nil {
		return err
	}
	if lerr != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: name, Err: lerr}
	}
	return nil
}

// reopenReadOnly opens f's file again, read-only, through /proc/self/fd
// (an unnamed file has no other name), for its reader to hold instead of
// f. The file stays linkable (linkUnnamed).
func reopenReadOnly(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	rfd, oerr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) {
		var proc string
		if proc, oerr = procSelfFD(int(fd)); oerr == nil {
			rfd, oerr = unix.Open(proc, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
	}); err != nil {
		return nil, err
	}
	if oerr != nil {
		return nil, &os.PathError{Op: "reopen", Path: f.Name(), Err: oerr}
	}
	return os.NewFile(uintptr(rfd), f.Name()), nil
}

// errNoProc says that /proc is not procfs (not mounted: a chroot, early
// boot; or a directory that only looks like it).
var errNoProc = errors.New("/proc is not mounted (procfs)")

// procSelfFD is the name of descriptor fd in /proc/self/fd, which open,
// chmod and linkat follow to fd's file: only when /proc is procfs, not
// a directory of a chroot that only looks like it, where
// /proc/self/fd/N could be a symlink to any file (/etc/shadow), which
// root would then open, change the mode of, or link into place
// (errNoProc). /proc is a mount point then, which no one but root can
// swap afterwards.
func procSelfFD(fd int) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/proc", &st); err != nil || st.Type != unix.PROC_SUPER_MAGIC {
		return "", errNoProc
	}
	return "/proc/self/fd/" + strconv.Itoa(fd), nil
}

// startWriteback asks the kernel to start writing f's dirty pages to
// disk now, without waiting (sync_file_range SYNC_FILE_RANGE_WRITE): the
// fsync before f is linked into place then has little left to wait for.
// Best effort; it guarantees nothing (the fsync does).
func startWriteback(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE) })
	}
}

// linkUnnamed is linkUnnamedAt with name a path.
func linkUnnamed(f *os.File, name string) error { return linkUnnamedAt(f, unix.AT_FDCWD, name) }
