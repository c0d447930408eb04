package session

import (
	"io"
	"log/slog"
	"os"

	"github.com/machineadm/machineadm/pkg/spec"
)

// MaxSpecBytes bounds a machine spec read from a file or standard input:
// 4 MiB, far above any real spec (user data itself is at most 64 KiB).
const MaxSpecBytes = 4 << 20

// ReadSpec reads the spec at path, or standard input for "-", at most
// MaxSpecBytes. A missing path, an unreadable file or a larger input is a
// *UsageError (exit code 2).
func ReadSpec(in io.Reader, path string) ([]byte, error) {
	if path == "" {
		return nil, Usagef("a machine spec is required: -f SPEC (a path, or - for standard input)")
	}
	var r io.Reader = in
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, Usagef("reading machine spec: %v", err)
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
			return nil, Usagef("reading machine spec: %s is not a regular file", path)
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return nil, Usagef("reading machine spec: %v", err)
	}
	if len(data) > MaxSpecBytes {
		return nil, Usagef("reading machine spec: %s is larger than %d bytes", displayName(path), MaxSpecBytes)
	}
	return data, nil
}

func displayName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}

// LoadSpec reads, decodes, defaults and validates the spec at path and
// logs its warnings (by field, never the value).
func LoadSpec(in io.Reader, log *slog.Logger, path string) (*spec.Loaded, error) {
	data, err := ReadSpec(in, path)
	if err != nil {
		return nil, err
	}
	return LoadBytes(log, data, path)
}

// LoadBytes decodes, defaults and validates spec bytes read from path and
// logs the warnings.
func LoadBytes(log *slog.Logger, data []byte, path string) (*spec.Loaded, error) {
	l, err := spec.Load(data, path)
	if err != nil {
		return nil, err
	}
	for _, w := range l.Warnings {
		log.Warn("spec warning", "field", w.Field, "message", w.Message)
	}
	return l, nil
}
