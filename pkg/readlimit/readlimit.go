// Package readlimit reads machineadm's inputs (machine specs, outcome
// reports, secret files) with a size cap, so that a device such as
// /dev/zero, a FIFO without a writer or a runaway file can neither exhaust
// memory nor block a run. It is the one reader every such input goes
// through; each caller names its own limit (spec.MaxSpecSize,
// report.MaxReportSize, redact.MaxSecretFileSize, pki.MaxCAFileSize).
package readlimit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// TooLargeError is an input larger than its limit.
type TooLargeError struct {
	// Limit is the most bytes the input may hold.
	Limit int64
	// Size is the input's size when known (a regular file's length), or
	// 0 when only "more than Limit" is known (a stream).
	Size int64
}

func (e *TooLargeError) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("%d bytes, more than the %d allowed", e.Size, e.Limit)
	}
	return fmt.Sprintf("more than the %d bytes allowed", e.Limit)
}

// NotRegularError is a path that names something other than a regular
// file: a FIFO, a device, a socket or a directory.
type NotRegularError struct {
	// Mode is the file's type bits.
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("not a regular file (%s)", Describe(e.Mode))
}

// Describe names the type of a file mode for people, with its article:
// "a regular file", "a FIFO", "a character device", "a block device",
// "a socket", "a directory", or the type bits' letters (fs.FileMode's
// String) for any other type.
func Describe(m fs.FileMode) string {
	switch t := m.Type(); {
	case m.IsRegular():
		return "a regular file"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDir != 0:
		return "a directory"
	default:
		return t.String()
	}
}

// IsTooLarge reports whether err is or wraps a *TooLargeError.
func IsTooLarge(err error) bool {
	var e *TooLargeError
	return errors.As(err, &e)
}

// File reads the regular file at path, of at most limit bytes (limit > 0).
// The file is opened without blocking (O_NONBLOCK on Unix), then checked
// through the open descriptor, so a FIFO or device put at path, even
// between a check and the open, is refused with a *NotRegularError and
// never read; a larger file gives a *TooLargeError without being read.
// The reading is capped at limit+1 bytes too, for a file that grows while
// it is read. Other errors are those of os.Open and Read (fs.ErrNotExist,
// fs.ErrPermission).
func File(path string, limit int64) ([]byte, error) {
	data, _, err := FileStat(path, limit)
	return data, err
}

// FileStat is File that also returns what the open descriptor's stat
// said of the file read, for a caller that checks its owner or mode: a
// look at the path before or after the read may see another file.
func FileStat(path string, limit int64) ([]byte, fs.FileInfo, error) {
	f, err := open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &NotRegularError{Mode: fi.Mode()}
	}
	if fi.Size() > limit {
		return nil, nil, &TooLargeError{Limit: limit, Size: fi.Size()}
	}
	data, err := Reader(f, limit)
	if err != nil {
		return nil, nil, err
	}
	return data, fi, nil
}

// Reader reads r to its end, at most limit bytes (limit > 0): a stream
// with more gives a *TooLargeError after limit+1 bytes were read. Used for
// standard input, where waiting for the writer is what a user asked for.
func Reader(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return data, nil
}
