// Package heapprof is a debugging aid for machineadm's memory use: with
// the environment variable EnvVar set to a file name FILE, a run writes a
// Go heap profile (runtime/pprof, the "heap" profile) to FILE at exit,
// after a garbage collection: every allocation of the run, by call
// stack. With PeaksEnvVar=1 as well, it also writes one to FILE.peak each
// time the live heap reaches a new peak (sampled every 20 ms). A heap
// profile's figures are those of the last completed garbage collection,
// so FILE.peak shows what the heap held just before its peak:
//
//	go tool pprof -top -sample_index=alloc_space FILE        (everything the run allocated)
//	go tool pprof -top -sample_index=inuse_space FILE.peak   (what the peak held)
//
// It is off unless EnvVar is set and never changes what a run does. The
// exit's profile is written when the work is done and does not raise the
// peak RSS; the peak profiles do, by a few MiB (the profile's own
// compression buffers), so a measurement of peak RSS runs without
// PeaksEnvVar.
package heapprof

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// EnvVar names the file the exit's heap profile is written to (mode
// 0600). Unset or empty: no profile.
const EnvVar = "MACHINEADM_DEBUG_HEAP_PROFILE"

// PeaksEnvVar, set to "1" beside EnvVar, adds the peak profiles (the file
// name with ".peak" appended, replaced at each new peak).
const PeaksEnvVar = "MACHINEADM_DEBUG_HEAP_PEAKS"

// Sampling: the live heap is read every sampleEvery; a profile is written
// when it exceeds the last profiled peak by more than growth (a fraction)
// and is at least minHeap bytes, so that a run writes a handful of
// profiles, not hundreds.
const (
	sampleEvery = 20 * time.Millisecond
	growth      = 0.10
	minHeap     = 8 << 20
)

// heapMetric is the runtime metric sampled: bytes in live and
// not-yet-swept heap objects.
const heapMetric = "/memory/classes/heap/objects:bytes"

// Profiler samples the heap and writes the profile; Stop ends it.
type Profiler struct {
	path   string
	warn   io.Writer
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	peak   uint64
	warned bool
}

// Start starts a Profiler writing to the file named by EnvVar (and with
// PeaksEnvVar=1 the peak profiles), or returns nil (and does nothing)
// when EnvVar is unset. Problems writing a profile are printed to warn,
// once, and never fail the run.
func Start(warn io.Writer) *Profiler {
	path := os.Getenv(EnvVar)
	if path == "" {
		return nil
	}
	return StartFile(path, os.Getenv(PeaksEnvVar) == "1", warn)
}

// StartFile starts a Profiler writing to path at Stop, and with peaks
// to path+".peak" at each new peak of the live heap.
func StartFile(path string, peaks bool, warn io.Writer) *Profiler {
	p := &Profiler{path: path, warn: warn, done: make(chan struct{})}
	if peaks {
		p.wg.Add(1)
		go p.sample()
	}
	return p
}

func (p *Profiler) sample() {
	defer p.wg.Done()
	s := []metrics.Sample{{Name: heapMetric}}
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if v := s[0].Value.Uint64(); v >= minHeap && float64(v) > float64(p.peakNow())*(1+growth) {
			p.write(p.path+".peak", v)
		}
	}
}

func (p *Profiler) peakNow() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// write records the heap profile as it is now (the profile's in-use
// figures are those of the last garbage collection; no collection is
// forced, which would lower the peak being looked for).
func (p *Profiler) write(path string, heap uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peak = max(p.peak, heap)
	// A new file of a random name (created exclusively, mode 0600), then
	// renamed over path: the profile may be written as root into a
	// directory others can write (/tmp), where a fixed staging name could
	// be a planted symlink (followed, its target overwritten) or a planted
	// file readable by others; a rename replaces a symlink at path rather
	// than following it.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}
	if err != nil && !p.warned && p.warn != nil {
		fmt.Fprintf(p.warn, "warning: %s: heap profile not written: %v\n", EnvVar, err)
		p.warned = true
	}
}

// Stop ends the sampling and writes the exit's profile (after a garbage
// collection). It returns the highest live heap sampled (bytes; 0
// without peaks). A nil Profiler does nothing.
func (p *Profiler) Stop() uint64 {
	if p == nil {
		return 0
	}
	close(p.done)
	p.wg.Wait()
	runtime.GC()
	p.write(p.path, 0)
	return p.peakNow()
}
