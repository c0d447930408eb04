//go:build unix

package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// lockOpenTries bounds how often openLockFile looks again when what is at
// the lock's path changes between its look and its open.
const lockOpenTries = 3

// openLockFile opens the lock file at path for reading and writing. What
// is at the path is looked at first (lstat) and only a regular file is
// ever opened: a symbolic link is refused (errLockLink), never followed,
// and a directory, FIFO, socket or device is refused without being opened,
// since opening a special file can act (a FIFO's open wakes a process
// waiting at its other end, a device's may start it). A missing file is
// created (with create) with O_EXCL and mode 0600. The open itself has
// O_NOFOLLOW, O_NONBLOCK and O_NOCTTY, and O_CLOEXEC so that no child
// process keeps the lock after machineadm exits; the opened file must be
// the one looked at (same device and inode: a swap in between is looked at
// again, at most lockOpenTries times), a regular file with one link (a
// hard link would make the lock's content rewrite another file), owned by
// this process's user or by root (another user's file is one that user
// could hold the lock on, or write the holder's lines of).
func openLockFile(path string, create bool) (*os.File, error) {
	for try := 1; ; try++ {
		f, err := openLockFileOnce(path, create)
		if !errors.Is(err, errLockChanged) || try >= lockOpenTries {
			return f, err
		}
	}
}

// errLockChanged is what was at the lock's path changing between the look
// and the open.
var errLockChanged = fmt.Errorf("%w: it changed while it was opened", errNotOwnLock)

func openLockFileOnce(path string, create bool) (*os.File, error) {
	flags := unix.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	var seen unix.Stat_t
	err := unix.Lstat(path, &seen)
	switch {
	case err == nil:
		if err := ownLockFile(&seen); err != nil {
			return nil, err
		}
	case errors.Is(err, unix.ENOENT) && create:
		flags |= unix.O_CREAT | unix.O_EXCL
	case errors.Is(err, unix.ENOENT):
		return nil, fs.ErrNotExist
	default:
		return nil, err
	}
	fd, err := unix.Open(path, flags, lockFileMode)
	if err != nil {
		switch {
		case errors.Is(err, unix.ELOOP):
			return nil, errLockLink
		case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOENT) && flags&unix.O_CREAT == 0:
			return nil, errLockChanged
		}
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	if err := ownLockFile(&st); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	if flags&unix.O_CREAT == 0 && (st.Dev != seen.Dev || st.Ino != seen.Ino) {
		_ = unix.Close(fd)
		return nil, errLockChanged
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ownLockFile checks what lstat or fstat says of the lock's path: a
// regular file of one link, owned by this process's user or by root.
func ownLockFile(st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return errLockLink
	case unix.S_IFDIR:
		return fmt.Errorf("%w: a directory", errNotOwnLock)
	case unix.S_IFIFO:
		return fmt.Errorf("%w: a FIFO (named pipe), not opened", errNotOwnLock)
	case unix.S_IFSOCK:
		return fmt.Errorf("%w: a socket", errNotOwnLock)
	case unix.S_IFCHR, unix.S_IFBLK:
		return fmt.Errorf("%w: a device, not opened", errNotOwnLock)
	default:
		return fmt.Errorf("%w: not a regular file (mode %#o)", errNotOwnLock, st.Mode&unix.S_IFMT)
	}
	if st.Nlink != 1 {
		return fmt.Errorf("%w: a file with %d hard links", errNotOwnLock, st.Nlink)
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid && st.Uid != 0 {
		return fmt.Errorf("%w: owned by another user (uid %d)", errNotOwnLock, st.Uid)
	}
	return nil
}

// tryLock takes flock(2) LOCK_EX|LOCK_NB on f: true when taken, false
// when another open file holds it. The kernel releases it when f's last
// descriptor closes, which a process's death does.
func tryLock(f *os.File) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, unix.EINTR):
			continue
		}
		return false, fmt.Errorf("flock: %w", err)
	}
}
