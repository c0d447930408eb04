//go:build !linux

package files

import (
	"fmt"
	"io/fs"
	"os"
)

// openSource opens hp, the host path of the file:// source p (Resolve),
// for reading when it is a regular file, its last component not
// followed and a FIFO not waited on (examineFlags); anything else is
// refused with an error naming p.
func openSource(hp, p string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(hp, os.O_RDONLY|examineFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", p, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
