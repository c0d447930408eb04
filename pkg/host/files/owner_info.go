package files

import "io/fs"

// Owner returns the numeric owner and group of a file's FileInfo (0:0 on
// Windows, which has no numeric owners).
func Owner(fi fs.FileInfo) (uid, gid int) { return fileOwner(fi) }

// Links returns the number of names (hard links) of the file a FileInfo
// describes (1 on Windows, which does not report them).
func Links(fi fs.FileInfo) int { return fileLinks(fi) }
