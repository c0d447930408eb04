//go:build !windows

// Package testfifo makes named pipes for tests of readers and writers that
// must refuse them (a FIFO blocks an open for read until a writer comes).
package testfifo

import (
	"syscall"
	"testing"
)

// Make creates a FIFO at path with mode 0600, failing the test on error.
func Make(t testing.TB, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}
