package files

import (
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openSource opens hp, the host path of the file:// source p (Resolve),
// for reading when it is a regular file; anything else (a FIFO, a
// device, a directory, a symlink swapped in since Resolve, which is not
// followed) is refused with an error naming p, without being opened: it
// is examined through an O_PATH descriptor first, which opens nothing
// (a device's open acts on it: /dev/watchdog's arms the watchdog, a
// tty's makes it the run's controlling terminal; a FIFO's releases a
// writer waiting for a reader), and only then opened for reading,
// through /proc/self/fd (procSelfFD) or, without /proc, by name again
// (not following a symlink, not blocking) and checked to be the same
// file.
func openSource(hp, p string) (*os.File, fs.FileInfo, error) {
	pfd, err := unix.Open(hp, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
		fd, err = unix.Open(proc, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if fd < 0 && (err == nil || err == unix.ENOENT) {
		fd, err = unix.Open(hp, unix.O_RDONLY|unix.O_CLOEXEC|examineFlags, 0)
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
