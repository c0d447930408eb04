//go:build !linux

package files

import (
	"errors"
	"os"
)

// openUnnamed is Linux's O_TMPFILE, which other systems lack: a Blob is
// staged in os.TempDir there, and copied into place.
func openUnnamed(dir string) (*os.File, error) { return nil, errors.ErrUnsupported }

// roomFor is never reached where openUnnamed fails.
func roomFor(dir string, size int64) bool { return true }

// linkUnnamed is never reached where openUnnamed fails.
func linkUnnamed(f *os.File, name string) error { return errors.ErrUnsupported }

// reopenReadOnly is never reached where openUnnamed fails.
func reopenReadOnly(f *os.File) (*os.File, error) { return nil, errors.ErrUnsupported }

// startWriteback does nothing where files cannot be staged in place.
func startWriteback(f *os.File) {}
