package phases

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestLineWriterConcurrent: lines written at once from many goroutines (as
// kubeadm's KubeWaiter does, one per component) each reach emit whole.
func TestLineWriterConcurrent(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	w := &lineWriter{emit: func(l string) {
		runtime.Gosched() // let the other writers in while a line is emitted
		mu.Lock()
		got[l]++
		mu.Unlock()
	}}
	const writers, lines = 16, 2000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				fmt.Fprintf(w, "[control-plane-check] component %d is healthy after %d ms\n", g, i)
			}
		}()
	}
	wg.Wait()
	w.Flush()
	for g := range writers {
		for i := range lines {
			if l := fmt.Sprintf("[control-plane-check] component %d is healthy after %d ms", g, i); got[l] != 1 {
				t.Fatalf("line %q emitted %d times", l, got[l])
			}
		}
	}
	if len(got) != writers*lines {
		t.Fatalf("%d distinct lines, want %d", len(got), writers*lines)
	}
}
