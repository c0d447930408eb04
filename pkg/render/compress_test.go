package render

import (
	"bytes"
	"compress/gzip"
	"runtime"
	"testing"
)

// A reused writer compresses as a new one does: the output of data after
// another compression is the output of a fresh writer at the same level.
func TestGzipDataReusedWriterSameOutput(t *testing.T) {
	first := bytes.Repeat([]byte("write_files: a spec, a stub\n"), 200)
	second := []byte("#!/bin/sh\nset -eu\nexec /usr/local/bin/machineadm bootstrap -f /etc/machineadm/spec.yaml\n")
	_ = gzipData(first)
	got := gzipData(second)
	var want bytes.Buffer
	zw, err := gzip.NewWriterLevel(&want, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(second)
	_ = zw.Close()
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("after another compression: %x\nwant (a new writer): %x", got, want.Bytes())
	}
}

// Compressing does not make a writer (about a megabyte of state) each
// time: 20 compressions after the first allocate less than one writer
// each. Not parallel, so that no other test allocates meanwhile.
func TestGzipDataReusesWriters(t *testing.T) {
	data := bytes.Repeat([]byte("spec: {role: Worker}\n"), 100)
	_ = gzipData(data)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		_ = gzipData(data)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 20; per > 256<<10 {
		t.Errorf("%d bytes allocated per compression, want under 256 KiB (a new writer is about a megabyte)", per)
	}
}
