package files

import (
	"io/fs"
	"os"
)

// ownersApply: Windows has no numeric owners; a file's access comes from
// the ACL it inherits from its directory, so Apply never changes owners
// and a spec's uid/gid are not compared.
const ownersApply = false

// fileOwner reports 0:0 on Windows, which has no numeric owners.
func fileOwner(fs.FileInfo) (uid, gid int) { return 0, 0 }

// effectiveMode is the part of the permission bits Windows keeps: the
// owner's write bit, which os.Chmod maps to the read-only attribute (Lstat
// reports 0666 or 0444 whatever was asked).
func effectiveMode(m fs.FileMode) fs.FileMode { return m & 0o200 }

// fileLinks is 1 on Windows, where Lstat does not report a file's hard
// links; Apply sets no owners there and the mode only as the read-only
// attribute.
func fileLinks(fs.FileInfo) int { return 1 }

// setInPlace sets the read-only attribute of hostPath from mode (owners
// are not set on Windows, which reports no hard links: replace is
// false).
func setInPlace(hostPath string, _ fs.FileInfo, mode fs.FileMode, _, _ int) (replace bool, err error) {
	return false, os.Chmod(hostPath, mode)
}

// sameState says whether a and b (os.Stat of one file, then again) have
// the same size and mtime.
func sameState(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
