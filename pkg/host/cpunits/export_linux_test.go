package cpunits

// SetProtectedHardlinks points the fs.protected_hardlinks sysctl chownTree
// reads at path and returns the restore.
func SetProtectedHardlinks(path string) func() {
	old := protectedHardlinks
	protectedHardlinks = path
	return func() { protectedHardlinks = old }
}

// MaxTreeDepth is maxTreeDepth.
const MaxTreeDepth = maxTreeDepth
