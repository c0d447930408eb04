package containerd

import (
	"fmt"
	"os"
	"path/filepath"
)

// Installed is the containerd binary found under a root: the one that
// reads config.toml, whose version and loader machineadm checks it with.
type Installed struct {
	// Path is its machine path, for example "/usr/bin/containerd".
	Path string
	// ID identifies the file without reading it: its size and
	// modification time and, on Linux, its device, inode and change time
	// (a package upgrade or a copy replaces the inode or changes the
	// change time). Two checks with the same ID ran the same binary.
	ID string
}

// FindInstalled returns the first containerd binary under root, looked up
// where DetectVersion and VerifyConfig look (symbolic links followed), or
// ErrNotInstalled.
func FindInstalled(root string) (Installed, error) {
	for _, b := range binaries {
		fi, err := os.Stat(filepath.Join(root, b))
		if err != nil || fi.IsDir() {
			continue
		}
		return Installed{Path: b, ID: fmt.Sprintf("size=%d mtime=%d%s", fi.Size(), fi.ModTime().UnixNano(), fileID(fi))}, nil
	}
	return Installed{}, ErrNotInstalled
}
