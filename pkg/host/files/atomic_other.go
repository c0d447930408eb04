//go:build !linux

package files

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/machineadm/machineadm/pkg/atomicfile"
)

// WriteAtomic replaces the host file hostPath with data owned by uid:gid
// with mode, through atomicfile (temporary file, owner and mode, fsync,
// rename, directory fsync), so that a crash leaves either the old or the
// new file, never a partial one. Missing parent directories are created
// with mode 0755. On Windows, which has no numeric owners, uid and gid are
// ignored and the file takes its directory's ACL.
func WriteAtomic(hostPath string, data []byte, mode fs.FileMode, uid, gid int) error {
	if err := os.MkdirAll(filepath.Dir(hostPath), 0o755); err != nil {
		return err
	}
	if !ownersApply {
		return atomicfile.WriteFile(hostPath, data, mode)
	}
	return atomicfile.WriteFileOwned(hostPath, data, mode, uid, gid)
}

// writeAtomicFrom is WriteAtomic of st's content read in pieces (a Blob or
// a large file), never whole in memory. A Blob staged in hostPath's
// directory (FetchFor) is linked into place instead (install), once.
func writeAtomicFrom(hostPath string, st State, mode fs.FileMode, uid, gid int) error {
	if err := os.MkdirAll(filepath.Dir(hostPath), 0o755); err != nil {
		return err
	}
	if !ownersApply {
		uid, gid = -1, -1
	}
	if st.src != nil && st.src.blob != nil {
		if done, err := st.src.blob.install(hostPath, mode, uid, gid); done {
			return err
		}
	}
	r, err := st.reader()
	if err != nil {
		return err
	}
	defer r.Close()
	return atomicfile.WriteFromOwned(hostPath, r, mode, uid, gid)
}

// installAttempts bounds the tries for a free temporary name in install.
const installAttempts = 10

// install puts b's content at hostPath with the guarantees of
// atomicfile's writes, without copying it, when b was staged unnamed in
// hostPath's directory (FetchFor) and is not installed yet: owner (uid or
// gid below 0 keeps the process's) and then mode set on b's file, fsync,
// the file linked under a new temporary name in the directory, renamed
// over hostPath, and the directory synced. A crash leaves the old file or
// the new one; before the rename, a temporary name at most, as atomicfile.
// done is false, with nothing changed on the host, when b cannot be
// linked there (another directory, another file system, no /proc): the
// caller copies it then. From then on b's file is hostPath's (Reader).
func (b *Blob) install(hostPath string, mode fs.FileMode, uid, gid int) (done bool, err error) {
	dir := filepath.Dir(hostPath)
	if b.dir == "" || b.installed != "" || dir != b.dir {
		return false, nil
	}
	if err := b.ready(hostPath, mode, uid, gid); err != nil {
		return true, err
	}
	var tmp string
	for range installAttempts {
		tmp = filepath.Join(dir, "."+filepath.Base(hostPath)+".tmp-"+rand.Text()[:12])
		err = linkUnnamed(b.f, tmp)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		// Nothing has a name: copying is left to the caller.
		return false, nil
	}
	b.installed = hostPath
	if err := os.Rename(tmp, hostPath); err != nil {
		os.Remove(tmp)
		b.installed = ""
		return true, fmt.Errorf("writing %s: %w", hostPath, err)
	}
	atomicfile.SyncDir(dir)
	return true, nil
}

// removeHost removes the host file hostPath.
func removeHost(hostPath string) error { return os.Remove(hostPath) }
