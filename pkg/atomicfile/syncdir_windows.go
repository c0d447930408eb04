package atomicfile

import "os"

// SyncDir fsyncs the directory dir, best effort: Windows cannot sync a
// directory, and has no FIFOs to wait on.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
