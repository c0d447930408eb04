//go:build scalebench

package scalebench

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// dropPageCache drops binary's pages from the page cache before it is
// started, so that each side pages its binary in from the file the same
// way. How a file entered the cache decides how much of it a page fault
// maps: pages read or written in large folios are mapped a folio at a
// time, so the same binary, once read by another tool, counted up to
// 13 MiB more file-backed memory at start than after this.
func dropPageCache(t *testing.T, binary string) {
	t.Helper()
	f, err := os.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Dirty pages (a binary just built) are not dropped: written first.
	if err := f.Sync(); err != nil {
		t.Fatalf("%s: %v", binary, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatalf("%s: dropping its pages from the page cache: %v", binary, err)
	}
}
