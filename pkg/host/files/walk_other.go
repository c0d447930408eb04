//go:build !linux

package files

import (
	"io/fs"
	"os"
)

// lstatHost is os.Lstat of hostPath, a path Resolve returned. (On Linux
// its directory is reached by descriptor.)
func lstatHost(hostPath string) (fs.FileInfo, error) { return os.Lstat(hostPath) }
