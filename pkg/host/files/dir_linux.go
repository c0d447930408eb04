package files

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/machineadm/machineadm/pkg/readlimit"
)

// readDirFile reads the host file hp for Dir as readlimit.File reads
// (a regular file of at most limit bytes, opened without blocking and
// checked through its descriptor), in its directory reached by
// descriptor (openDir), a symlink at hp not followed: Resolve resolved
// every link, so one there was swapped in since.
func readDirFile(hp string, limit int64) ([]byte, error) {
	d, err := openDir(filepath.Dir(hp), 0, false)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fd, err := unix.Openat(dirFD(d), filepath.Base(hp), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: hp, Err: err}
	}
	f := os.NewFile(uintptr(fd), hp)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &readlimit.NotRegularError{Mode: fi.Mode()}
	}
	if fi.Size() > limit {
		return nil, &readlimit.TooLargeError{Limit: limit, Size: fi.Size()}
	}
	return readlimit.Reader(f, limit)
}

// writeDirFile writes the host file hp for Dir, owned by the running
// user, as WriteAtomic writes (in its directory reached by descriptor),
// missing parents made 0700.
func writeDirFile(hp string, data []byte, mode fs.FileMode) error {
	d, err := openDir(filepath.Dir(hp), 0o700, true)
	if err != nil {
		return err
	}
	defer d.Close()
	return writeAt(d, hp, bytes.NewReader(data), mode, -1, -1)
}

// mkdirAllHost makes the host directory hp and its missing parents with
// mode, by descriptor (openDir).
func mkdirAllHost(hp string, mode fs.FileMode) error {
	d, err := openDir(hp, mode, true)
	if err != nil {
		return err
	}
	return d.Close()
}
