package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

// Create on Windows: CreateHardLink makes the file, a second Create of
// the path is fs.ErrExist and leaves it, and no temporary file stays. A
// directory of its own rather than t.TempDir, whose cleanup fails under
// wine 8 (docs/windows.md).
func TestCreateWindows(t *testing.T) {
	dir, err := os.MkdirTemp("", "atomicfile-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "key")
	if err := Create(p, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Create(p, []byte("second\n"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Create: %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "first\n" {
		t.Errorf("the file was replaced: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("entries left: %v", ents)
	}
}
