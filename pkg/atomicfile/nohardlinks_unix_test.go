//go:build !windows

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
)

// A link(2) refused by a file system without hard links (vfat's EPERM, a
// FUSE file system's ENOSYS, EOPNOTSUPP) says so and how to get the file
// (Create's error was only "link … operation not permitted", which reads
// as a permission problem to a user running as root); an existing path
// and other errors keep their own.
func TestNoHardLinksErrorSaysWhy(t *testing.T) {
	for errno, want := range map[syscall.Errno]bool{
		syscall.EPERM: true, syscall.ENOSYS: true, syscall.EOPNOTSUPP: true,
		syscall.EEXIST: false, syscall.EACCES: false, syscall.ENOSPC: false,
	} {
		err := noHardLinks("/media/usb", &os.LinkError{Op: "link", Old: "/media/usb/.key.new-1", New: "/media/usb/key", Err: errno})
		if got := errors.Is(err, ErrNoHardLinks); got != want {
			t.Errorf("%v: ErrNoHardLinks %v, want %v (%v)", errno, got, want, err)
		}
		if !errors.Is(err, errno) {
			t.Errorf("%v: the cause is lost: %v", errno, err)
		}
		if want && !strings.Contains(err.Error(), "/media/usb: the file system does not support hard links") {
			t.Errorf("%v: %v names neither the directory nor the cause", errno, err)
		}
		if errno == syscall.EEXIST && !errors.Is(err, fs.ErrExist) {
			t.Errorf("EEXIST no longer ErrExist: %v", err)
		}
	}
}
