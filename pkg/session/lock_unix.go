//go:build unix

package session

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openLockFile opens the lock file at path for reading and writing: with
// O_NOFOLLOW, so that a symbolic link planted there is refused (ELOOP)
// rather than followed to the file it names; with O_CLOEXEC, so that no
// child process keeps the lock after machineadm exits; with O_NONBLOCK,
// so that a FIFO there never blocks the open. With create a missing file
// is created with mode 0600. The file must be a regular file with one
// link: a hard link would make the lock's content rewrite another file.
func openLockFile(path string, create bool) (*os.File, error) {
	flags := unix.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
	if create {
		flags |= unix.O_CREAT
	}
	fd, err := unix.Open(path, flags, lockFileMode)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, errLockLink
		}
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("%w: not a regular file (mode %#o)", errNotOwnLock, st.Mode&unix.S_IFMT)
	}
	if st.Nlink != 1 {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("%w: a file with %d hard links", errNotOwnLock, st.Nlink)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
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
