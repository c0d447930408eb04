package heapprof

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// gzipMagic starts every profile runtime/pprof writes (gzip-compressed
// protocol buffers).
var gzipMagic = []byte{0x1f, 0x8b}

func TestOffUnlessSet(t *testing.T) {
	t.Setenv(EnvVar, "")
	if p := Start(nil); p != nil {
		t.Fatal("a profiler started without " + EnvVar)
	}
	var p *Profiler
	if p.Stop() != 0 { // a nil Profiler's Stop does nothing
		t.Error("nil Stop")
	}
}

func TestExitProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pprof")
	t.Setenv(EnvVar, path)
	t.Setenv(PeaksEnvVar, "")
	p := Start(nil)
	if p == nil {
		t.Fatal("no profiler with " + EnvVar + " set")
	}
	p.Stop()
	data, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(data, gzipMagic) {
		t.Fatalf("profile: %d bytes, %v", len(data), err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := os.Stat(path + ".peak"); !os.IsNotExist(err) {
		t.Errorf("a peak profile without %s: %v", PeaksEnvVar, err)
	}
}

var keep [][]byte

// TestPeakProfile: with peaks on, a live heap that grows past the
// threshold gets a profile of its own.
func TestPeakProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pprof")
	t.Setenv(EnvVar, path)
	t.Setenv(PeaksEnvVar, "1")
	p := Start(nil)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	// The sampler reads every 20 ms; wait for it (bounded) to see the heap.
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(path + ".peak"); err == nil {
			break
		}
		keep = append(keep, make([]byte, 1<<10))
		sleep()
	}
	peak := p.Stop()
	keep = nil
	if peak < 64<<20 {
		t.Errorf("peak %d bytes, want at least the 64 MiB kept", peak)
	}
	data, err := os.ReadFile(path + ".peak")
	if err != nil || !bytes.HasPrefix(data, gzipMagic) {
		t.Fatalf("peak profile: %d bytes, %v", len(data), err)
	}
}

func TestUnwritableProfileWarnsOnce(t *testing.T) {
	var warn bytes.Buffer
	p := StartFile(filepath.Join(t.TempDir(), "missing", "heap.pprof"), false, &warn)
	p.Stop()
	if !bytes.Contains(warn.Bytes(), []byte("heap profile not written")) || bytes.Count(warn.Bytes(), []byte("\n")) != 1 {
		t.Errorf("warning: %q", warn.String())
	}
}

func sleep() { time.Sleep(10 * time.Millisecond) }
