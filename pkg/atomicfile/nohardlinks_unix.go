//go:build !windows

package atomicfile

import (
	"errors"
	"syscall"
)

// linkRefusedByFileSystem reports a link(2) error by which a file system
// without hard links answers: EPERM (vfat, msdos) besides the unsupported
// operations (ENOSYS from a FUSE file system without link, EOPNOTSUPP)
// that errors.ErrUnsupported covers.
func linkRefusedByFileSystem(err error) bool {
	return errors.Is(err, syscall.EPERM)
}
