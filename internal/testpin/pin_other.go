//go:build !linux

// Package testpin makes a file that os.Remove cannot remove, even for
// root, for tests of the failure paths of code that removes files.
package testpin

import "testing"

// Undeletable skips the test: only Linux is supported (its immutable
// inode flag).
func Undeletable(t testing.TB, path string) {
	t.Helper()
	t.Skip("testpin: only on Linux")
}
