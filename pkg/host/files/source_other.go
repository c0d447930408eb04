//go:build !linux

package files

import (
	"fmt"
	"io/fs"
	"os"
)

// OpenRegular opens hp, a host path (p names it in errors), for reading
// when it is a regular file, and returns it with its stat; anything else
// is refused with an error naming p. The name is examined before it is
// opened (without following a symlink there unless follow, without
// waiting on a FIFO: examineFlags) and must be the file examined after.
// (On Linux it is examined through a descriptor that opens nothing.)
func OpenRegular(hp, p string, follow bool) (*os.File, fs.FileInfo, error) {
	stat, flags := os.Lstat, examineFlags
	if follow {
		stat, flags = os.Stat, examineFlags&^nofollowFlag
	}
	pre, err := stat(hp)
	if err != nil {
		return nil, nil, err
	}
	if !pre.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file (%s)", p, pre.Mode().Type())
	}
	f, err := os.OpenFile(hp, os.O_RDONLY|flags, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(pre, fi) {
		f.Close()
		return nil, nil, fmt.Errorf("%s changed while machineadm opened it: it is no longer the file examined", p)
	}
	return f, fi, nil
}

// openResolved is OpenRegular of hp, a path Resolve returned, without
// following a symlink at its last component. (On Linux no symlink swapped
// in anywhere on hp since is followed.)
func openResolved(hp, p string) (*os.File, fs.FileInfo, error) {
	return OpenRegular(hp, p, false)
}
