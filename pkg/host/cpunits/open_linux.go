package cpunits

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openRegular opens the regular file at host path hp for reading (a
// symlink there followed) and returns it with its fstat. Anything else
// (a FIFO, a device, a directory) is an error naming p and is never
// opened for reading: it is examined through an O_PATH descriptor first,
// which runs no driver's open (a watchdog device would arm, a tape
// rewind, a FIFO release a waiting writer) and never blocks, and the
// file then reopened through /proc/self/fd, which is the inode examined
// whatever replaced the name since. Without /proc, or with a /proc that
// is not procfs (procfs), the name is opened again (without blocking)
// and must be the file examined.
func openRegular(hp, p string) (*os.File, fs.FileInfo, error) {
	pfd, err := unix.Open(hp, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: hp, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, nil, &os.PathError{Op: "stat", Path: hp, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil, fmt.Errorf("%s is not a regular file (%s)", p, typeName(st.Mode))
	}
	fd, err := -1, error(unix.ENOENT)
	if procfs() {
		fd, err = unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		fd, err = unix.Open(hp, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: hp, Err: err}
	}
	f := os.NewFile(uintptr(fd), hp)
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		f.Close()
		return nil, nil, &os.PathError{Op: "stat", Path: hp, Err: err}
	}
	if now.Dev != st.Dev || now.Ino != st.Ino {
		f.Close()
		return nil, nil, fmt.Errorf("%s changed while it was opened", p)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// procfs says whether /proc is procfs: not a directory of a chroot that
// only looks like it, where /proc/self/fd/N could be a symlink to any
// file (a FIFO, whose waiting writer its open releases; /dev/watchdog,
// which its open arms), as files.procSelfFD checks. /proc is a mount
// point then, which no one but root can swap afterwards.
func procfs() bool {
	var st unix.Statfs_t
	return unix.Statfs("/proc", &st) == nil && st.Type == unix.PROC_SUPER_MAGIC
}

// typeName names the file type of a stat mode.
func typeName(mode uint32) string {
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
	}
	return fmt.Sprintf("type %#o", mode&unix.S_IFMT)
}
