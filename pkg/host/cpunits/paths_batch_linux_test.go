package cpunits_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// TestApplyPathsRecursiveLargeDirBoundedMemory: a directory of many
// entries (etcd's owner may make millions) is read in batches, not whole:
// the heap the walk holds stays far below the size of the directory's
// names. 40000 names of 200 bytes are 8 MB; the walk may hold 4 MB more
// than before it began (the batch is a few hundred names). Every entry
// still gets the owner, the directory after them.
func TestApplyPathsRecursiveLargeDirBoundedMemory(t *testing.T) {
	root, data, rules := protectedEtcdRule(t)
	const entries, nameLen = 40000, 200
	big := filepath.Join(data, "big")
	if err := os.Mkdir(big, 0o700); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", nameLen-6)
	for i := range entries {
		f, err := os.OpenFile(filepath.Join(big, fmt.Sprintf("%s%06d", pad, i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	// Collect often, so that the heap in use is close to what is live.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	changes, err := cpunits.ApplyPaths(root, rules, false)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("set owner 4242:4242 on %d entries below /var/lib/etcd", entries+1); len(changes) == 0 || changes[0] != want {
		t.Errorf("changes %q, want %q first", changes, want)
	}
	if u := ownerOf(t, filepath.Join(big, pad+"039999")); u != 4242 {
		t.Errorf("last entry's owner %d, want 4242", u)
	}
	if u := ownerOf(t, big); u != 4242 {
		t.Errorf("the directory's owner %d, want 4242", u)
	}
	grew := int64(peak) - int64(base)
	t.Logf("the walk held %d bytes more of heap at its peak", grew)
	if grew > 4<<20 {
		t.Errorf("the walk of a directory of %d names of %d bytes held %d bytes more of heap at its peak, want at most %d (read in batches)", entries, nameLen, grew, 4<<20)
	}
}
