package files

import (
	"fmt"
	"io"
	"io/fs"
)

// SetOwnerMode gives the host file hostPath, which fi (os.Lstat)
// describes, owner uid:gid and mode. A directory, or a file with one
// name, is changed in place (keeping content and mtime). A regular file
// with other names (hard links, which share its owner and mode: a local
// user's link to /etc/shadow, say) is replaced instead, with a copy of
// its content written as WriteAtomic writes, so that only hostPath
// changes and the other names keep theirs; it is copied only while
// hostPath still names the file fi described. In place means through a
// descriptor of the file fi described: a path swapped since for a
// symlink (out of the root, to /etc/shadow) or another file is refused,
// and a file linked since is replaced as above (setInPlace). On Windows
// owners are not set, as in Apply.
func SetOwnerMode(hostPath string, fi fs.FileInfo, mode fs.FileMode, uid, gid int) error {
	if !fi.Mode().IsRegular() || fileLinks(fi) <= 1 {
		// Through the file fi described, not a name swapped in since;
		// one linked since is replaced as below (another file put in
		// its place is refused there: openExamined).
		if replace, err := setInPlace(hostPath, fi, mode, uid, gid); !replace {
			return err
		}
	}
	f, err := openExamined(hostPath, fi)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := writeAtomicFrom(hostPath, State{src: &source{size: fi.Size(), open: func() (io.ReadCloser, error) { return io.NopCloser(f), nil }}}, mode, uid, gid); err != nil {
		return fmt.Errorf("replacing %s, which has other names (hard links): %w", hostPath, err)
	}
	return nil
}
