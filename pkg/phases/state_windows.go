package phases

import "io/fs"

// linkCount is the number of hard links of the file fi describes: Lstat
// does not report it on Windows, where the work directory is
// Administrators-only; 1.
func linkCount(fs.FileInfo) uint64 { return 1 }

// keepOwner does nothing on Windows: the files machineadm backs up there
// inherit the directory's access list.
func keepOwner(fs.FileInfo, string) error { return nil }
