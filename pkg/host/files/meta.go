package files

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// SetOwnerMode gives the host file hostPath, which fi (os.Lstat)
// describes, owner uid:gid and mode. A directory, or a file with one
// name, is changed in place (keeping content and mtime). A regular file
// with other names (hard links, which share its owner and mode: a local
// user's link to /etc/shadow, say) is refused with an error naming it,
// changing nothing (RefuseLinked), as the walk of etcd's data directory
// refuses one: in place the other names would get the owner, and a copy
// would give the owner their content. One the change takes writing away
// from someone (revokesWrite) is replaced instead, with a copy of its
// content written as WriteAtomic writes, so that a descriptor they
// opened before writes to the old file: the copy reads the size fi
// gives, no more, and fails, replacing nothing, unless the file then
// still has the size, mtime and ctime fi gives (written to since it was
// examined, by the writer the change is for, say). In place means through a
// descriptor of the file fi described: a path swapped since for a
// symlink (out of the root, to /etc/shadow) or another file is refused,
// and a file linked since is refused as above (setInPlace). On Windows
// owners are not set, as in Apply.
func SetOwnerMode(hostPath string, fi fs.FileInfo, mode fs.FileMode, uid, gid int) error {
	if err := RefuseLinked(hostPath, fi); err != nil {
		return err
	}
	// Through the file fi described, not a name swapped in since;
	// one linked since or another file put in its place is refused
	// below (openExamined).
	if replace, err := setInPlace(hostPath, fi, mode, uid, gid); !replace {
		return err
	}
	f, err := openExamined(hostPath, fi)
	if err != nil {
		return err
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := RefuseLinked(hostPath, ofi); err != nil {
		return err
	}
	r := &unchangedReader{f: f, r: io.LimitedReader{R: f, N: fi.Size()}, examined: fi}
	if err := writeAtomicFrom(hostPath, State{src: &source{size: fi.Size(), open: func() (io.ReadCloser, error) { return io.NopCloser(r), nil }}}, mode, uid, gid); err != nil {
		return fmt.Errorf("replacing %s, whose new mode or owner takes writing away from someone: %w", hostPath, err)
	}
	return nil
}

// RefuseLinked refuses, with an error naming hostPath, a change of the
// owner or mode of the regular file fi (os.Lstat of hostPath) describes
// when it has other names (hard links): nil otherwise (SetOwnerMode).
func RefuseLinked(hostPath string, fi fs.FileInfo) error {
	if n := fileLinks(fi); fi.Mode().IsRegular() && n > 1 {
		return fmt.Errorf("%q has %d names (hard links): machineadm does not give a file with other names an owner or mode (a link to /etc/shadow would give /etc/shadow, or a copy its content); remove the other names, or this one (find / -xdev -samefile PATH lists them)", hostPath, n)
	}
	return nil
}

// unchangedReader reads the first bytes of f (r: as many as f had when
// examined) and fails at their end, instead of io.EOF, unless f still is
// as examined (os.Lstat): its size, mtime and ctime (sameState).
type unchangedReader struct {
	f        *os.File
	r        io.LimitedReader
	examined fs.FileInfo
}

func (u *unchangedReader) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	if err != io.EOF {
		return n, err
	}
	fi, serr := u.f.Stat()
	switch {
	case serr != nil:
		err = serr
	case u.r.N > 0 || !sameState(u.examined, fi):
		err = fmt.Errorf("%s changed since machineadm examined it (something wrote to it); run again", u.f.Name())
	}
	return n, err
}
