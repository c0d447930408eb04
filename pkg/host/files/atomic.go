package files

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteAtomic replaces the host file hostPath with data: it writes a
// temporary file in the same directory, sets its mode, owner and group,
// fsyncs it, renames it over hostPath and fsyncs the directory, so that a
// crash leaves either the old or the new file, never a partial one.
// Missing parent directories are created with mode 0755.
func WriteAtomic(hostPath string, data []byte, mode fs.FileMode, uid, gid int) (err error) {
	dir := filepath.Dir(hostPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".machineadm-"+filepath.Base(hostPath)+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	// Owner first: chown clears setuid bits, and the mode must be final.
	if err = tmp.Chown(uid, gid); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), hostPath); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
