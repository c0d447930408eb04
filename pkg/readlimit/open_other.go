//go:build !unix

package readlimit

import "os"

// open opens path for reading; Windows has no FIFOs that block an open.
func open(path string) (*os.File, error) {
	return os.Open(path)
}
