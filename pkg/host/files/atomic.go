package files

import (
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
// a large file), never whole in memory.
func writeAtomicFrom(hostPath string, st State, mode fs.FileMode, uid, gid int) error {
	if err := os.MkdirAll(filepath.Dir(hostPath), 0o755); err != nil {
		return err
	}
	r, err := st.reader()
	if err != nil {
		return err
	}
	defer r.Close()
	if !ownersApply {
		uid, gid = -1, -1
	}
	return atomicfile.WriteFromOwned(hostPath, r, mode, uid, gid)
}
