package atomicfile

import (
	"errors"
	"syscall"
)

// errorInvalidFunction is ERROR_INVALID_FUNCTION, CreateHardLink's answer
// on a FAT or exFAT volume.
const errorInvalidFunction syscall.Errno = 1

// linkRefusedByFileSystem reports a CreateHardLink error by which a volume
// without hard links answers: ERROR_INVALID_FUNCTION (FAT, exFAT) besides
// ERROR_NOT_SUPPORTED, which errors.ErrUnsupported covers.
func linkRefusedByFileSystem(err error) bool {
	return errors.Is(err, errorInvalidFunction)
}
