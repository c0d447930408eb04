package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openMeta opens hostPath for setInPlace, its last component not
// followed (a symlink is opened as itself, which setInPlace refuses),
// with O_PATH: the descriptor needs no permission on the file, so that a
// run that is not root (prepare --root DIR as a user) changes the owner
// and mode of its own file without read permission (mode 0200, say),
// as chmod(2) would; a FIFO does not block it.
// Its directory is reached by descriptor (openDir), a directory swapped
// for a symlink since not followed.
func openMeta(hostPath string) (*os.File, error) { return openPathHost(hostPath, "open") }

// chownMeta gives the file of f (openMeta) owner uid:gid.
func chownMeta(f *os.File, uid, gid int) error {
	return metaControl(f, "chown", func(fd int) error {
		return unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
	})
}

// chmodMeta gives the file of f (openMeta) mode: fchmod(2) of an O_PATH
// descriptor fails (EBADF), so through fchmodat2's AT_EMPTY_PATH (Linux
// 6.6), or where that fails, /proc/self/fd (which chmod follows to the
// file f was opened on, a regular file or directory here). fchmodat2
// fails with EOPNOTSUPP (x/sys/unix's word for ENOSYS) on an older
// kernel, and with EPERM under a seccomp filter older than it (Docker's
// default profile before 25, systemd-nspawn's of a systemd that does not
// know it): a denial that is real (not the owner, an immutable file) is
// met again through /proc/self/fd, which costs one system call more.
// Without /proc either (or with a /proc that is not procfs: procSelfFD),
// the file is opened again (chmodReopened).
func chmodMeta(f *os.File, mode fs.FileMode) error {
	return metaControl(f, "chmod", func(fd int) error {
		err := fchmodat(fd, "", uint32(mode.Perm()), unix.AT_EMPTY_PATH)
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM) {
			cause := err
			var proc string
			if proc, err = procSelfFD(fd); err == nil {
				err = unix.Fchmodat(unix.AT_FDCWD, proc, uint32(mode.Perm()), 0)
			}
			if errors.Is(err, errNoProc) || errors.Is(err, unix.ENOENT) {
				err = chmodReopened(f.Name(), fd, mode, cause)
			}
		}
		return err
	})
}

// chmodReopened is chmodMeta where neither fchmodat2 nor /proc is there
// (a kernel before 6.6 in a chroot or at early boot without /proc): the
// regular file or directory of fd (openMeta of hostPath) is opened again
// by its name, read-only, its last component not followed (examineFlags),
// and changed through that descriptor if it is still the same file, as
// before O_PATH; that takes read permission, which root has. Anything
// else (a device, which opening may act on) is refused with an error
// saying why: cause, fchmodat2's error, says whether the kernel lacks
// it (EOPNOTSUPP) or it was refused (EPERM: a seccomp filter older than
// it, or no right to change the mode, which fchmod then meets again).
func chmodReopened(hostPath string, fd int, mode fs.FileMode, cause error) error {
	why := "the kernel has no fchmodat2 (Linux 6.6) and /proc is not mounted"
	if errors.Is(cause, unix.EPERM) {
		why = "fchmodat2 was refused (operation not permitted: by a seccomp filter that does not know it, or for want of the right to change the mode) and /proc is not mounted"
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
		return fmt.Errorf("%s, and only a regular file or directory is opened again to set its mode (this is %s)", why, fileTypeName(st.Mode))
	}
	rfd, err := unix.Open(hostPath, unix.O_RDONLY|unix.O_CLOEXEC|examineFlags, 0)
	if err != nil {
		return fmt.Errorf("%s, and opening the file failed: %w", why, err)
	}
	defer unix.Close(rfd)
	var rst unix.Stat_t
	if err := unix.Fstat(rfd, &rst); err != nil {
		return err
	}
	if rst.Dev != st.Dev || rst.Ino != st.Ino {
		return errors.New("changed while machineadm set its mode and owner: it is no longer the file examined")
	}
	return unix.Fchmod(rfd, uint32(mode.Perm()))
}

// fchmodat is unix.Fchmodat, which tests replace to take chmodMeta's
// way for kernels without fchmodat2.
var fchmodat = unix.Fchmodat

func metaControl(f *os.File, op string, do func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var derr error
	if err := rc.Control(func(fd uintptr) { derr = do(int(fd)) }); err != nil {
		return err
	}
	if derr != nil {
		return &fs.PathError{Op: op, Path: f.Name(), Err: derr}
	}
	return nil
}

// sameState says whether a and b (os.Stat of one file, then again) have
// the same size, mtime and ctime: any write in between changes the ctime
// (to the kernel's clock tick: one in the tick of the first Stat may go
// unseen).
func sameState(a, b fs.FileInfo) bool {
	sa, oka := a.Sys().(*syscall.Stat_t)
	sb, okb := b.Sys().(*syscall.Stat_t)
	return oka && okb && os.SameFile(a, b) && a.Size() == b.Size() && sa.Mtim == sb.Mtim && sa.Ctim == sb.Ctim
}
