package files

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// OpenRegular opens hp, a host path (p names it in errors), for reading
// when it is a regular file, and returns it with its stat; anything else
// (a FIFO, a device, a directory, and with follow false a symlink at the
// last component) is refused with an error naming p, without being
// opened: it is examined through an O_PATH descriptor first, which opens
// nothing (a device's open acts on it: /dev/watchdog's arms the watchdog,
// a tty's makes it the run's controlling terminal; a FIFO's releases a
// writer waiting for a reader), and only then opened for reading, through
// /proc/self/fd when /proc is procfs (procSelfFD) or else by name again
// (a symlink followed only with follow) and checked to be the same file;
// either way not blocking (a regular file whose read waits for data,
// /proc/kmsg, fails with EAGAIN) and taking no controlling terminal.
// follow says whether a symlink at hp is followed: false for a path
// Resolve resolved (a symlink there was swapped in since), true for one
// given as the machine sees it (a unit's binary).
func OpenRegular(hp, p string, follow bool) (*os.File, fs.FileInfo, error) {
	return openRegularAt(unix.AT_FDCWD, hp, hp, p, follow)
}

// openResolved is OpenRegular of hp, a path Resolve returned (p names it
// in errors), without following a symlink anywhere on it that someone
// other than root could have swapped in since (a directory on the way
// too, not only the last component): its directory is reached by
// descriptor (openDir) and the file opened in it.
func openResolved(hp, p string) (*os.File, fs.FileInfo, error) {
	d, err := openDir(filepath.Dir(hp), 0, false)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	return openRegularAt(dirFD(d), filepath.Base(hp), hp, p, false)
}

// openRegularAt is OpenRegular of name in the directory dirfd (or
// AT_FDCWD), whose host path is hp.
func openRegularAt(dirfd int, name, hp, p string, follow bool) (*os.File, fs.FileInfo, error) {
	examine, reopen := unix.O_PATH|unix.O_CLOEXEC, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY
	if !follow {
		examine, reopen = examine|unix.O_NOFOLLOW, reopen|unix.O_NOFOLLOW
	}
	pfd, err := unix.Openat(dirfd, name, examine, 0)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: hp, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, nil, &fs.PathError{Op: "stat", Path: hp, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil, fmt.Errorf("%s is not a regular file (%s)", p, fileTypeName(st.Mode))
	}
	fd := -1
	if proc, perr := procSelfFD(pfd); perr == nil {
		// As by name (reopen), but following the magic link.
		fd, err = unix.Open(proc, reopen&^unix.O_NOFOLLOW, 0)
	}
	if fd < 0 && (err == nil || err == unix.ENOENT) {
		fd, err = unix.Openat(dirfd, name, reopen, 0)
	}
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: hp, Err: err}
	}
	f := os.NewFile(uintptr(fd), hp)
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		f.Close()
		return nil, nil, &fs.PathError{Op: "stat", Path: hp, Err: err}
	}
	if now.Dev != st.Dev || now.Ino != st.Ino {
		f.Close()
		return nil, nil, fmt.Errorf("%s changed while machineadm opened it: it is no longer the file examined", p)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// fileTypeName names the file type of a stat mode, for errors.
func fileTypeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return fmt.Sprintf("type %#o", mode&unix.S_IFMT)
}
