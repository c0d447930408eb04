package files

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// WriteAtomic replaces the host file hostPath with data owned by uid:gid
// with mode, as atomicfile writes (temporary file, owner and mode, fsync,
// rename, directory fsync), so that a crash leaves either the old or the
// new file, never a partial one. Missing parent directories are created
// with mode 0755. The parent directory is reached by descriptor
// (openDir): a directory on the way swapped since hostPath was resolved
// for a symbolic link is refused (ErrLinkNotFollowed), not followed to
// put the content anywhere, and the temporary file, the rename and the
// fsync are all made in the directory reached.
func WriteAtomic(hostPath string, data []byte, mode fs.FileMode, uid, gid int) error {
	return writeAtomicFrom(hostPath, State{Exists: true, Content: data}, mode, uid, gid)
}

// writeAtomicFrom is WriteAtomic of st's content read in pieces (a Blob or
// a large file), never whole in memory. A Blob staged in hostPath's
// directory (FetchFor) is linked into place instead (install), once.
func writeAtomicFrom(hostPath string, st State, mode fs.FileMode, uid, gid int) error {
	d, err := openDir(filepath.Dir(hostPath), 0o755, true)
	if err != nil {
		return fmt.Errorf("writing %s: %w", hostPath, err)
	}
	defer d.Close()
	if !ownersApply {
		uid, gid = -1, -1
	}
	if st.src != nil && st.src.blob != nil {
		if done, err := st.src.blob.install(d, hostPath, mode, uid, gid); done {
			return err
		}
	}
	r, err := st.reader()
	if err != nil {
		return err
	}
	defer r.Close()
	return writeAt(d, hostPath, r, mode, uid, gid)
}

// installAttempts bounds the tries for a free temporary name in install
// and writeAt.
const installAttempts = 10

// tempName is a new temporary name for base in its directory.
func tempName(base string) string { return "." + base + ".tmp-" + rand.Text()[:12] }

// writeAt writes r's content to hostPath, whose directory d is (openDir),
// as atomicfile.WriteFromOwned writes (uid or gid below 0 keeps the
// process's owner), but every step relative to d: the temporary file
// made in d (O_EXCL, O_NOFOLLOW), its owner and then mode set, fsync,
// renamed over hostPath's name in d, and d synced.
func writeAt(d *os.File, hostPath string, r io.Reader, mode fs.FileMode, uid, gid int) (err error) {
	dfd, base := dirFD(d), filepath.Base(hostPath)
	var f *os.File
	var tmp string
	for range installAttempts {
		tmp = tempName(base)
		fd, oerr := unix.Openat(dfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if oerr == unix.EEXIST {
			err = &fs.PathError{Op: "open", Path: filepath.Join(d.Name(), tmp), Err: oerr}
			continue
		}
		if oerr != nil {
			return fmt.Errorf("writing %s: %w", hostPath, &fs.PathError{Op: "open", Path: filepath.Join(d.Name(), tmp), Err: oerr})
		}
		f = os.NewFile(uintptr(fd), filepath.Join(d.Name(), tmp))
		break
	}
	if f == nil {
		return fmt.Errorf("writing %s: %w", hostPath, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			_ = unix.Unlinkat(dfd, tmp, 0)
			err = fmt.Errorf("writing %s: %w", hostPath, err)
		}
	}()
	// io.Copy lets the file take the reader (ReadFrom), which copies
	// between files in the kernel where it can.
	if _, err = io.Copy(f, r); err != nil {
		return err
	}
	// Owner before mode, since chown clears setuid bits.
	if uid >= 0 && gid >= 0 {
		if err = f.Chown(uid, gid); err != nil {
			return err
		}
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if rerr := unix.Renameat(dfd, tmp, dfd, base); rerr != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(d.Name(), tmp), New: hostPath, Err: rerr}
	}
	// Make the rename durable; some file systems cannot sync a
	// directory, and the rename is done by then.
	_ = d.Sync()
	return nil
}

// install puts b's content at hostPath, whose directory d is (openDir),
// with the guarantees of atomicfile's writes, without copying it, when b
// was staged unnamed in hostPath's directory (FetchFor) and is not
// installed yet: owner (uid or gid below 0 keeps the process's) and then
// mode set on b's file, fsync, the file linked under a new temporary name
// in d, renamed over hostPath's name in d, and d synced. A crash leaves
// the old file or the new one; before the rename, a temporary name at
// most, as atomicfile. done is false, with nothing changed on the host,
// when b cannot be linked there (another directory, another file system,
// no /proc): the caller copies it then. From then on b's file is
// hostPath's (Reader).
func (b *Blob) install(d *os.File, hostPath string, mode fs.FileMode, uid, gid int) (done bool, err error) {
	if b.dir == "" || b.installed != "" || filepath.Dir(hostPath) != b.dir {
		return false, nil
	}
	if err := b.ready(hostPath, mode, uid, gid); err != nil {
		return true, err
	}
	dfd, base := dirFD(d), filepath.Base(hostPath)
	var tmp string
	for range installAttempts {
		tmp = tempName(base)
		err = linkUnnamedAt(b.f, dfd, tmp)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		// Nothing has a name (another file system than d's: a
		// directory swapped since the Blob was staged): copying is left
		// to the caller.
		return false, nil
	}
	b.installed = hostPath
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		b.installed = ""
		return true, fmt.Errorf("writing %s: %w", hostPath, &os.LinkError{Op: "rename", Old: filepath.Join(d.Name(), tmp), New: hostPath, Err: err})
	}
	_ = d.Sync()
	return true, nil
}

// removeHost removes the host file hostPath (os.Remove), by its name in
// its directory reached by descriptor (openDir): a directory on the way
// swapped for a symbolic link is not followed to remove a file of that
// name elsewhere. A missing directory is a missing file.
func removeHost(hostPath string) error {
	d, err := openDir(filepath.Dir(hostPath), 0, false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &fs.PathError{Op: "remove", Path: hostPath, Err: unix.ENOENT}
		}
		return fmt.Errorf("removing %s: %w", hostPath, err)
	}
	defer d.Close()
	dfd, base := dirFD(d), filepath.Base(hostPath)
	err = unix.Unlinkat(dfd, base, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		// As os.Remove: an empty directory is removed too.
		if rerr := unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR); rerr == nil {
			return nil
		} else if rerr != unix.ENOTDIR {
			err = rerr
		}
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: hostPath, Err: err}
	}
	return nil
}
