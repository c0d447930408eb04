package files

import (
	"bytes"
	"io/fs"
)

// Dir reads and writes machine paths confined to one root directory: every
// path is resolved under Root by Resolve (symbolic links followed without
// leaving it), and writes are atomic. On Linux the resolved path's
// directory is then reached by descriptor, as WriteAtomic reaches it
// (openDir): a symlink swapped in since, for a directory on the way or
// the file, is not followed. Phases write through a Dir instead
// of calling os.WriteFile, so a test or a dry run points them at a
// directory of its own.
type Dir struct {
	// Root is the directory machine paths are resolved under: "/" on a
	// host, a work directory or a test directory otherwise.
	Root string
}

// Path returns the host path of the machine path p (absolute) under the
// root; see Resolve for the errors.
func (d Dir) Path(p string) (string, error) {
	root := d.Root
	if root == "" {
		root = "/"
	}
	return Resolve(root, p)
}

// MaxDirFileSize bounds what Dir reads (1 MiB): the files phases keep
// under a Dir (the run state, certificates and keys, kubeconfigs) are a
// few KiB.
const MaxDirFileSize = 1 << 20

// ReadFile reads the machine path p under the root: a regular file of at
// most MaxDirFileSize bytes (readlimit.File: a larger file is a
// *readlimit.TooLargeError, a FIFO or device a *readlimit.NotRegularError,
// and neither blocks nor reads without bound).
func (d Dir) ReadFile(p string) ([]byte, error) {
	hp, err := d.Path(p)
	if err != nil {
		return nil, err
	}
	return readDirFile(hp, MaxDirFileSize)
}

// WriteFile makes the machine path p under the root hold data with mode
// (owned by the running user): unless it already holds the same bytes, it
// is written atomically (atomicfile), its missing parent directories
// created with mode 0700. It reports whether it wrote.
func (d Dir) WriteFile(p string, data []byte, mode fs.FileMode) (bool, error) {
	hp, err := d.Path(p)
	if err != nil {
		return false, err
	}
	if old, err := readDirFile(hp, MaxDirFileSize); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	return true, writeDirFile(hp, data, mode)
}

// MkdirAll creates the machine directory p under the root with mode (and
// its missing parents).
func (d Dir) MkdirAll(p string, mode fs.FileMode) error {
	hp, err := d.Path(p)
	if err != nil {
		return err
	}
	return mkdirAllHost(hp, mode)
}
