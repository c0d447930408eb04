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

// TestProfileDoesNotWriteThroughPlantedFiles: the profile is written as
// root, often to a path in a directory others can write (/tmp). A symlink
// planted at the staging name must not be followed (it would truncate and
// overwrite its target), and a file planted there readable by others must
// not receive the profile.
func TestProfileDoesNotWriteThroughPlantedFiles(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "heap.pprof")
	if err := os.Symlink(victim, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	StartFile(path, false, nil).Stop()
	if data, err := os.ReadFile(victim); err != nil || string(data) != "keep me" {
		t.Errorf("the symlink's target was written: %q, %v", data, err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(data, gzipMagic) {
		t.Fatalf("profile: %d bytes, %v", len(data), err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("profile %v, %v: want a regular file of mode 0600", fi, err)
	}

	// A world-readable file planted at the staging name.
	path2 := filepath.Join(dir, "heap2.pprof")
	if err := os.WriteFile(path2+".tmp", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	StartFile(path2, false, nil).Stop()
	if fi, err := os.Stat(path2); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("profile %v, %v: want mode 0600", fi, err)
	}
}
