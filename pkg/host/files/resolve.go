// Package files writes files on the host through a root prefix: it resolves
// machine paths under the root (following symbolic links without leaving
// it), compares the desired state with what is there, renders a diff for
// dry runs, and writes atomically (temporary file, fsync, rename). It also
// resolves owner and group names against the root's /etc/passwd and
// /etc/group, and fetches remote content verified by SHA-256.
//
// The pure part (Plan, Diff) never touches the host; Apply and
// WriteAtomic do.
package files

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds how many symbolic links one Resolve follows (the
// kernel's own limit is 40).
const maxLinks = 40

// ErrEscapesRoot is returned when a path is relative or names a place
// outside the root.
var ErrEscapesRoot = errors.New("path escapes the root")

// Resolve returns the host path of the machine path p (absolute, for
// example "/etc/containerd/config.toml") under root (for example "/" or
// "/mnt/image"). Symbolic links met on the way are followed as the machine
// would see them: an absolute link target restarts at root, and ".."
// never climbs above root. A relative p, or one with a ".." component, is
// refused with ErrEscapesRoot, even though ".." would be clamped: the spec
// validation refuses such paths and a caller passing one is a bug. The
// final component is not required to exist.
func Resolve(root, p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%q: %w (not absolute)", p, ErrEscapesRoot)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("%q: %w (contains '..')", p, ErrEscapesRoot)
		}
	}
	root = filepath.Clean(root)
	rest := strings.Split(strings.Trim(filepath.Clean(p), "/"), "/")
	var done []string // resolved components below root
	links := 0
	for len(rest) > 0 {
		part := rest[0]
		rest = rest[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := filepath.Join(append([]string{root}, append(done, part)...)...)
		fi, err := os.Lstat(cur)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				// Nothing below a missing component can be a link.
				done = append(done, part)
				done = append(done, rest...)
				return filepath.Join(append([]string{root}, done...)...), nil
			}
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			done = append(done, part)
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("%q: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(cur)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			done = nil
		}
		rest = append(strings.Split(strings.Trim(target, "/"), "/"), rest...)
	}
	return filepath.Join(append([]string{root}, done...)...), nil
}
