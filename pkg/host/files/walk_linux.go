package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLinkNotFollowed marks a symbolic link met on the way to a host
// directory (openDir) in a directory that someone other than root can
// change: a path Resolve returned has no link below its root, so such a
// link was swapped in since (by the owner of /home/alice in an image, say,
// for a directory), and following it would write or read anywhere,
// outside the root too.
var ErrLinkNotFollowed = errors.New("a symbolic link in a directory that someone other than root can change is not followed")

// openDir opens the host directory dir (absolute) by descriptor, one
// component after the other from "/", never following a symbolic link
// that someone other than root could have put there: a link is followed
// only when the directory holding it is owned by root (or the running
// user, when that is not root) and writable by no one else (no group or
// other write bit, which an ACL granting write to anyone would show), or
// sticky with the link root's or the running user's (linkTrusted), as
// in a --root DIR that is or goes through a symlink; any other one is
// refused (ErrLinkNotFollowed), as is every link below a directory on the
// way whose entry someone else could rename or replace (linkTrusted of a
// directory: alice's /home/alice/img, where she may put one of root's
// directories holding a link of root's in place of another), and a
// component that is not a directory
// is refused with ENOTDIR. Whatever is renamed on the way after it was
// walked through changes nothing: the next step starts from the
// directory reached, not from a name. With create, missing directories
// are made with mode perm (less the umask), as os.MkdirAll makes them.
// The directory returned is open for reading (to fsync it; only O_PATH
// when the running user may not read it) and is the one the walk
// reached, whatever its name is by then; its Name is dir.
func openDir(dir string, perm fs.FileMode, create bool) (*os.File, error) {
	if !filepath.IsAbs(dir) {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: errors.New("not an absolute path")}
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}()
	cur := "/" // the host path walked, for errors
	rest := strings.Split(dir, "/")
	links := 0
	// held is the stat of the directory fd is on. swappable names the
	// first directory on the way that someone other than root could have
	// renamed or replaced (its entry is not linkTrusted: alice's
	// /home/alice/img, or a directory in one), with why: no link is
	// followed below it, whoever owns the link and its directory, since
	// the owner of a directory above could have put any directory of
	// hers, or any of root's from beside it, in its place, with a link
	// root made for another purpose (var/run -> /run in an image) where
	// the walk goes next.
	var held unix.Stat_t
	if err := unix.Fstat(fd, &held); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: "/", Err: err}
	}
	swappable := ""
	for len(rest) > 0 {
		part := rest[0]
		rest = rest[1:]
		if part == "" || part == "." {
			continue
		}
		next := filepath.Join(cur, part)
		op := "open"
		nfd, err := openStep(fd, part)
		if err == unix.ENOENT && create && part != ".." {
			op = "mkdir"
			if err = unix.Mkdirat(fd, part, uint32(perm.Perm())); err == nil || err == unix.EEXIST {
				op = "open"
				nfd, err = openStep(fd, part)
			}
		}
		if err != nil {
			return nil, &fs.PathError{Op: op, Path: next, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(nfd, &st); err != nil {
			unix.Close(nfd)
			return nil, &fs.PathError{Op: "stat", Path: next, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if swappable == "" && part != ".." && !linkTrusted(&held, &st) {
				swappable = fmt.Sprintf("%s (owner %d, in %s: owner %d, mode %04o)", next, st.Uid, cur, held.Uid, held.Mode&0o7777)
			}
			unix.Close(fd)
			fd, cur, held = nfd, next, st
			continue
		case unix.S_IFLNK:
		default:
			unix.Close(nfd)
			return nil, &fs.PathError{Op: "open", Path: next, Err: unix.ENOTDIR}
		}
		target, err := readLinkFD(nfd)
		unix.Close(nfd)
		if err != nil {
			return nil, &fs.PathError{Op: "readlink", Path: next, Err: err}
		}
		if err := unix.Fstat(fd, &held); err != nil {
			return nil, &fs.PathError{Op: "stat", Path: cur, Err: err}
		}
		if swappable != "" {
			return nil, fmt.Errorf("%s is a symbolic link (to %s, owner %d) below %s, which someone other than root can rename or replace: %w; it was put there after the path was resolved, or the path goes through a directory others can change", next, target, st.Uid, swappable, ErrLinkNotFollowed)
		}
		if !linkTrusted(&held, &st) {
			return nil, fmt.Errorf("%s is a symbolic link (to %s, owner %d) in %s, which someone other than root can change (owner %d, mode %04o): %w; it was put there after the path was resolved, or the path goes through a directory others can change", next, target, st.Uid, cur, held.Uid, held.Mode&0o7777, ErrLinkNotFollowed)
		}
		if links++; links > maxLinks {
			return nil, &fs.PathError{Op: "open", Path: dir, Err: unix.ELOOP}
		}
		if strings.HasPrefix(target, "/") {
			rfd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return nil, &fs.PathError{Op: "open", Path: "/", Err: err}
			}
			if err := unix.Fstat(rfd, &held); err != nil {
				unix.Close(rfd)
				return nil, &fs.PathError{Op: "stat", Path: "/", Err: err}
			}
			unix.Close(fd)
			fd, cur = rfd, "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	// The walk's descriptors open nothing (O_PATH); the directory
	// reached is opened for reading through its own, to fsync it. A
	// directory the running user may search and write but not list
	// (mode 0300, a run that is not root) is used as the walk reached it,
	// as its path was: every *at call takes that descriptor, and only
	// the best-effort fsync after a rename fails on it.
	rfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == unix.EACCES {
		rfd, fd, err = fd, -1, nil
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(rfd), dir), nil
}

// openStep opens the entry part of the directory fd (O_PATH) without
// following a symbolic link there: as a directory first (O_DIRECTORY),
// which mounts an automount point not mounted yet (autofs: a /boot/efi
// with x-systemd.automount) as a lookup of the path through it did,
// where O_PATH alone gives the automount point itself, an empty
// directory in which nothing can be made; anything else (a link, a file)
// is then opened as it is.
func openStep(fd int, part string) (int, error) {
	nfd, err := unix.Openat(fd, part, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == unix.ENOTDIR {
		nfd, err = unix.Openat(fd, part, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	return nfd, err
}

// linkTrusted says whether a symbolic link (link, its lstat) in the
// directory held (its stat) may be followed, or whether a directory
// (link) in held is there as root or the running user left it: held is
// owned by root or the running user, and either no one else may write in
// it, or it is sticky (/tmp, 1777) and the link is root's or the running
// user's, whom alone the sticky bit lets remove or rename it there (what
// the kernel's fs.protected_symlinks checks too: a --root that is a link
// in /tmp), and a symbolic link there has no other name: with
// fs.protected_hardlinks off, anyone may give root's link elsewhere
// (var/run -> /run) a name of theirs in /tmp, which would be root's link
// there. Write granted by a POSIX ACL shows in the group bits (the ACL
// mask).
func linkTrusted(held, link *unix.Stat_t) bool {
	euid := uint32(os.Geteuid())
	if held.Uid != 0 && held.Uid != euid {
		return false
	}
	if held.Mode&0o022 == 0 {
		return true
	}
	if link.Mode&unix.S_IFMT == unix.S_IFLNK && link.Nlink != 1 {
		return false
	}
	return held.Mode&unix.S_ISVTX != 0 && (link.Uid == 0 || link.Uid == euid)
}

// readLinkFD is the target of the symbolic link fd (O_PATH|O_NOFOLLOW)
// is open on.
func readLinkFD(fd int) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, "", buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// dirFD is d's descriptor, for the *at calls, without os.File.Fd's
// switch to blocking mode (nothing to switch for a directory, but Fd
// documents it). d must stay open while it is used.
func dirFD(d *os.File) int {
	fd := -1
	if rc, err := d.SyscallConn(); err == nil {
		_ = rc.Control(func(f uintptr) { fd = int(f) })
	}
	return fd
}

// lstatHost is os.Lstat of hostPath, a path Resolve returned, in its
// directory reached by descriptor (openDir): the file examined is the one
// in that directory, not one a directory swapped for a symlink since
// leads to (whose content a diff would show, or whose mode a change in
// place would set, every later open of the path being checked to be the
// file examined).
func lstatHost(hostPath string) (fs.FileInfo, error) {
	f, err := openPathHost(hostPath, "lstat")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// openPathHost opens hostPath, a path Resolve returned, as itself (a
// symlink not followed) with O_PATH, in its directory reached by
// descriptor (openDir); a failure of the open is a *fs.PathError of op.
func openPathHost(hostPath, op string) (*os.File, error) {
	d, err := openDir(filepath.Dir(hostPath), 0, false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fd, err := unix.Openat(dirFD(d), filepath.Base(hostPath), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: hostPath, Err: err}
	}
	return os.NewFile(uintptr(fd), hostPath), nil
}
