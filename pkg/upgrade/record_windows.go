package upgrade

import "io/fs"

// checkRecordAccess accepts every record on Windows, where the work
// directory's ACL decides who may write it.
func checkRecordAccess(fs.FileInfo) error { return nil }
