//go:build !windows && !linux

package files

import (
	"io/fs"
	"os"
)

// openMeta opens hostPath for setInPlace, read-only, its last component
// not followed (examineFlags).
func openMeta(hostPath string) (*os.File, error) {
	return os.OpenFile(hostPath, os.O_RDONLY|examineFlags, 0)
}

// chownMeta gives the file of f (openMeta) owner uid:gid.
func chownMeta(f *os.File, uid, gid int) error { return f.Chown(uid, gid) }

// chmodMeta gives the file of f (openMeta) mode.
func chmodMeta(f *os.File, mode fs.FileMode) error { return f.Chmod(mode) }

// sameState says whether a and b (os.Stat of one file, then again) have
// the same size and mtime.
func sameState(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
