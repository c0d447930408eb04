//go:build !linux

package files

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/readlimit"
)

// readDirFile reads the host file hp for Dir (readlimit.File).
func readDirFile(hp string, limit int64) ([]byte, error) { return readlimit.File(hp, limit) }

// writeDirFile writes the host file hp for Dir: missing parents made 0700,
// then atomicfile.WriteFile.
func writeDirFile(hp string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(hp), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(hp, data, mode)
}

// mkdirAllHost makes the host directory hp and its missing parents.
func mkdirAllHost(hp string, mode fs.FileMode) error { return os.MkdirAll(hp, mode) }
