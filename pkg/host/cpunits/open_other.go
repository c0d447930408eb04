//go:build !linux

package cpunits

import (
	"fmt"
	"io/fs"
	"os"
)

// openRegular opens the regular file at host path hp for reading (a
// symlink there followed) and returns it with its stat; anything else is
// an error naming p. The name is examined before it is opened (without
// blocking where there are FIFOs) and must be the file examined after.
// (The Systemd control plane runs on Linux, where it is examined through
// a descriptor that opens nothing.)
func openRegular(hp, p string) (*os.File, fs.FileInfo, error) {
	pre, err := os.Stat(hp)
	if err != nil {
		return nil, nil, err
	}
	if !pre.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file (%s)", p, pre.Mode().Type())
	}
	f, err := os.OpenFile(hp, os.O_RDONLY|nonblock, 0)
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
		return nil, nil, fmt.Errorf("%s changed while it was opened", p)
	}
	return f, fi, nil
}
