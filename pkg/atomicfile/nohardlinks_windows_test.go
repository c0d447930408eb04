package atomicfile

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// CreateHardLink on a FAT or exFAT volume (ERROR_INVALID_FUNCTION) or one
// that does not support it (ERROR_NOT_SUPPORTED) says the volume has no
// hard links; ERROR_ALREADY_EXISTS stays fs.ErrExist.
func TestNoHardLinksErrorSaysWhyWindows(t *testing.T) {
	for errno, want := range map[syscall.Errno]bool{
		errorInvalidFunction: true, errorNotSupported: true,
		syscall.ERROR_ALREADY_EXISTS: false, syscall.ERROR_ACCESS_DENIED: false,
	} {
		err := noHardLinks(`D:\`, &os.LinkError{Op: "link", Old: `D:\.key.new-1`, New: `D:\key`, Err: errno})
		if got := errors.Is(err, ErrNoHardLinks); got != want {
			t.Errorf("%v: ErrNoHardLinks %v, want %v (%v)", errno, got, want, err)
		}
		if !errors.Is(err, errno) {
			t.Errorf("%v: the cause is lost: %v", errno, err)
		}
	}
}

// errorNotSupported is ERROR_NOT_SUPPORTED (50).
const errorNotSupported syscall.Errno = 50
