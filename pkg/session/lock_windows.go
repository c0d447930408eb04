package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// openLockFile opens the lock file at path for reading and writing: with
// FILE_FLAG_OPEN_REPARSE_POINT, so that a symbolic link (or junction)
// planted there is opened itself, and then refused, rather than followed;
// with a handle that child processes do not inherit. With create a
// missing file is created. The file must be a regular file with one
// link: a hard link would make the lock's content rewrite another file.
// Its access is the directory's (ACLs; there is no mode 0600).
func openLockFile(path string, create bool) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	disposition := uint32(windows.OPEN_EXISTING)
	if create {
		disposition = windows.OPEN_ALWAYS
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil, disposition,
		windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
			return nil, fs.ErrNotExist
		}
		return nil, err
	}
	var fi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &fi); err != nil {
		_ = windows.CloseHandle(h)
		return nil, err
	}
	switch {
	case fi.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		_ = windows.CloseHandle(h)
		return nil, errLockLink
	case fi.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0:
		_ = windows.CloseHandle(h)
		return nil, fmt.Errorf("%w: a directory", errNotOwnLock)
	case fi.NumberOfLinks > 1:
		_ = windows.CloseHandle(h)
		return nil, fmt.Errorf("%w: a file with %d hard links", errNotOwnLock, fi.NumberOfLinks)
	}
	return os.NewFile(uintptr(h), path), nil
}

// lockOffsetHigh places the locked byte at offset 2^32, past the file's
// content: a LockFileEx lock is mandatory, and a lock over the content
// would keep a second run from reading who holds it.
const lockOffsetHigh = 1

// tryLock takes LockFileEx LOCKFILE_EXCLUSIVE_LOCK|LOCKFILE_FAIL_IMMEDIATELY
// on one byte of f: true when taken, false when another handle holds it.
// Windows releases it when f's handle closes, which a process's end does.
func tryLock(f *os.File) (bool, error) {
	ol := &windows.Overlapped{OffsetHigh: lockOffsetHigh}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return false, nil
	}
	return false, fmt.Errorf("LockFileEx: %w", err)
}
