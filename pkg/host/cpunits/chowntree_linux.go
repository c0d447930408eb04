package cpunits

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxTreeDepth bounds how many directories deep chownTree walks (etcd's
// data directory is three deep: member/snap/db), so that a tree its owner
// nests without end neither exhausts descriptors nor grows the paths
// held for it.
const maxTreeDepth = 32

// protectedHardlinks is the sysctl that, at 1, lets a user link only
// files it may read and write (fs.protected_hardlinks). A variable for
// tests.
var protectedHardlinks = "/proc/sys/fs/protected_hardlinks"

// chownTree gives every entry below dir the owner and returns how many
// changed; an error names the entry it stopped at, after the entries
// before it changed. The tree is walked through descriptors, never by
// path, since the directory's owner (etcd) writes it while it is walked:
// an entry is opened without following it (O_PATH|O_NOFOLLOW), examined
// and given the owner through that descriptor, and a directory is read
// through a descriptor opened from it, dirBatch names at a time (memory
// stays bounded however many entries it has). A directory swapped for a symlink
// to /etc after it was listed is the symlink then, given the owner itself
// and not followed.
//
// What the owner could have linked there is refused, not given to it:
//   - a non-directory with other names (hard links: etcd may link
//     /etc/shadow into its data directory; given the owner in place the
//     other names would take it, and a copy would hand its content over);
//   - when fs.protected_hardlinks is not 1, any non-directory (symbolic
//     links aside) not the owner's yet in a directory the owner may write
//     (it owns it, or the directory is group- or world-writable): a link
//     of a file, whose other name the owner removes after machineadm
//     opened it, has one name when it is examined.
//
// A directory gets the owner after its entries (post-order), so that one
// the owner may not write yet (a data directory moved from root's etcd)
// cannot change while its entries are examined. Neither another file
// system mounted below dir (nor a directory bind-mounted there from its
// own: another mount id) nor more than maxTreeDepth levels are walked:
// both are errors, except the owner's own directory that deep, which is
// left as it is.
func chownTree(dir string, uid, gid int, dryRun bool) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	b, err := os.ReadFile(protectedHardlinks)
	w := treeWalk{uid: uid, gid: gid, dryRun: dryRun, dev: st.Dev, protected: err == nil && strings.TrimSpace(string(b)) == "1"}
	w.mnt, w.hasMnt = mountID(fd)
	return w.below(d, 1, w.writable(&st))
}

// treeWalk is one chownTree: the owner, whether it is a dry run, the
// file system and the mount of the tree's top (hasMnt: the kernel said
// which) and fs.protected_hardlinks.
type treeWalk struct {
	uid, gid  int
	dryRun    bool
	dev       uint64
	mnt       uint64
	hasMnt    bool
	protected bool
}

// mountID is the id of the mount the file open as fd is on (statx
// STATX_MNT_ID, Linux 5.8), or false where the kernel does not say: a
// directory bind-mounted from the tree's own file system has its st_dev.
func mountID(fd int) (uint64, bool) {
	var x unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &x) != nil || x.Mask&unix.STATX_MNT_ID == 0 {
		return 0, false
	}
	return x.Mnt_id, true
}

// writable says whether the owner may add or remove names in the
// directory st describes: it owns it, or its group or anyone may write
// there (conservative: the group is not looked at).
func (w treeWalk) writable(st *unix.Stat_t) bool {
	return int(st.Uid) == w.uid || st.Mode&0o022 != 0
}

// dirBatch is how many names chownTree reads of a directory at a time:
// the entries of each batch are walked before the next is read, so that
// a directory of millions of entries (its owner may make them) is never
// held whole. With maxTreeDepth levels each holding a batch, the walk
// holds at most about maxTreeDepth*dirBatch names (of at most 255 bytes).
const dirBatch = 256

// below gives the entries of the directory d (at depth levels below the
// top; writable: the owner may change its names) the owner, reading its
// names dirBatch at a time.
func (w treeWalk) below(d *os.File, depth int, writable bool) (n int, err error) {
	for {
		names, rerr := d.Readdirnames(dirBatch)
		for _, name := range names {
			p := filepath.Join(d.Name(), name)
			fd, err := unix.Openat(int(d.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if errors.Is(err, unix.ENOENT) {
				continue // removed since it was listed
			}
			if err != nil {
				return n, fmt.Errorf("opening %q: %w", p, err)
			}
			m, err := w.entry(fd, p, depth, writable)
			n += m
			if err != nil {
				return n, err
			}
		}
		switch {
		case rerr == io.EOF:
			return n, nil
		case errors.Is(rerr, unix.ENOENT):
			return n, nil // removed while it was walked
		case rerr != nil:
			return n, fmt.Errorf("reading %q: %w", d.Name(), rerr)
		}
	}
}

// entry gives the entry p, open as fd (O_PATH), which it closes, the
// owner: a directory after its entries.
func (w treeWalk) entry(fd int, p string, depth int, parentWritable bool) (n int, err error) {
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("examining %q: %w", p, err)
	}
	if mnt, ok := mountID(fd); st.Dev != w.dev || ok && w.hasMnt && mnt != w.mnt {
		return 0, fmt.Errorf("%q is a mount (a bind mount too) or on another file system than the directory it is below: machineadm does not give the owner what is mounted there; unmount it, or give its entries their owner yourself", p)
	}
	typ := st.Mode & unix.S_IFMT
	owned := int(st.Uid) == w.uid && int(st.Gid) == w.gid
	if !owned {
		n++
		// Refused in a dry run too, which would otherwise plan a
		// change the run refuses.
		switch {
		case typ != unix.S_IFDIR && st.Nlink > 1:
			return 0, fmt.Errorf("%q has %d names (hard links): machineadm does not give a file with other names an owner (a link to /etc/shadow would give /etc/shadow, or a copy its content); remove the other names, or this one", p, st.Nlink)
		case typ != unix.S_IFDIR && typ != unix.S_IFLNK && int(st.Uid) != w.uid && parentWritable && !w.protected:
			return 0, fmt.Errorf("%q is not the owner's, in a directory the owner may write, and fs.protected_hardlinks is not 1: it may be another file the owner linked there (one name left is no proof: the owner may remove the other after it was examined); set fs.protected_hardlinks=1, or check it and give it its owner yourself", p)
		}
	}
	if typ != unix.S_IFDIR {
		if !owned && !w.dryRun {
			if err := unix.Fchownat(fd, "", w.uid, w.gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return 0, fmt.Errorf("giving %q its owner: %w", p, err)
			}
		}
		return n, nil
	}
	if depth >= maxTreeDepth {
		if owned {
			// The owner's own directory this deep is of its own
			// making: left as it is, nothing below it given the
			// owner, not refused (the owner could otherwise make
			// every run fail).
			return n, nil
		}
		return n, fmt.Errorf("%q is %d directories below the directory given its owner: machineadm does not walk deeper than %d", p, depth, maxTreeDepth)
	}
	sub, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return n, fmt.Errorf("opening %q: %w", p, err)
	}
	// One descriptor held for each level walked, not two.
	unix.Close(fd)
	fd = -1
	d := os.NewFile(uintptr(sub), p)
	defer d.Close()
	m, err := w.below(d, depth+1, w.writable(&st))
	n += m
	if err != nil || owned || w.dryRun {
		return n, err
	}
	if err := d.Chown(w.uid, w.gid); err != nil {
		return n, fmt.Errorf("giving %q its owner: %w", p, err)
	}
	return n, nil
}
