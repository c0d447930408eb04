package cpunits

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// chownTree gives every entry below dir the owner and returns how many
// changed. The tree is walked through descriptors, never by path, since
// the directory's owner (etcd) writes it while it is walked: an entry is
// opened without following it (O_PATH|O_NOFOLLOW), examined and given
// the owner through that descriptor, and a directory is read through a
// descriptor opened from it. A directory swapped for a symlink to /etc
// after it was listed is the symlink then, given the owner itself and
// not followed. A regular file with other names (hard links: etcd may
// link /etc/shadow into its data directory) is refused: given the owner
// in place the other names would take it, and a copy given the owner
// would hand its content over.
func chownTree(dir string, uid, gid int, dryRun bool) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return chownBelow(os.NewFile(uintptr(fd), dir), uid, gid, dryRun)
}

// chownBelow is chownTree of the entries of the directory d, which it
// closes.
func chownBelow(d *os.File, uid, gid int, dryRun bool) (n int, err error) {
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	for _, name := range names {
		p := filepath.Join(d.Name(), name)
		fd, err := unix.Openat(int(d.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // removed since it was listed
		}
		if err != nil {
			return n, &os.PathError{Op: "open", Path: p, Err: err}
		}
		m, err := chownEntry(fd, p, uid, gid, dryRun)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// chownEntry gives the entry p, open as fd (O_PATH), which it closes,
// the owner, and its entries when it is a directory.
func chownEntry(fd int, p string, uid, gid int, dryRun bool) (n int, err error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: p, Err: err}
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		n++
		// Refused in a dry run too, which would otherwise plan a
		// change the run refuses.
		if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
			return 0, fmt.Errorf("%s has %d names (hard links): machineadm does not give a file with other names an owner (a link to /etc/shadow would give /etc/shadow, or a copy its content); remove the other names, or this one", p, st.Nlink)
		}
		if !dryRun {
			if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
				return 0, &os.PathError{Op: "chown", Path: p, Err: err}
			}
		}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return n, nil
	}
	sub, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return n, &os.PathError{Op: "open", Path: p, Err: err}
	}
	m, err := chownBelow(os.NewFile(uintptr(sub), p), uid, gid, dryRun)
	return n + m, err
}
