package cmd

import (
	"errors"
	"io/fs"
	"os"

	"github.com/machineadm/machineadm/pkg/readlimit"
	"github.com/machineadm/machineadm/pkg/session"
)

// checkFileFlag refuses a flag's file path that names something other
// than a regular file (a FIFO, a device, a socket, a directory, or a
// symbolic link to one): reading a FIFO or a terminal blocks forever and
// a device never ends. The error is a usage error (exit code 2) naming
// the flag. A path that does not exist is left to the command, which
// says so in its own words (or uses its default).
func checkFileFlag(flag, path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return session.Usagef("--%s %s: %v", flag, path, err)
	}
	if !fi.Mode().IsRegular() {
		return session.Usagef("--%s %s: must be a regular file, got %s", flag, path, readlimit.Describe(fi.Mode()))
	}
	return nil
}
