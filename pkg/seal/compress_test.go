package seal

import (
	"bytes"
	"compress/flate"
	"runtime"
	"testing"
)

// A reused writer compresses as a new one does, and what it writes
// inflates back.
func TestDeflateReusedWriterSameOutput(t *testing.T) {
	first := bytes.Repeat([]byte("apiVersion: machineadm.io/v1alpha1\n"), 200)
	second := []byte("kind: SealedSecrets\nfiles: {/etc/kubernetes/pki/ca.key: ...}\n")
	_ = deflate(first)
	got := deflate(second)
	var want bytes.Buffer
	w, err := flate.NewWriter(&want, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(second)
	_ = w.Close()
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("after another compression: %x\nwant (a new writer): %x", got, want.Bytes())
	}
	back, err := inflate(got)
	if err != nil || !bytes.Equal(back, second) {
		t.Fatalf("inflate: %q, %v; want %q", back, err, second)
	}
}

// Sealing does not make a writer (about a megabyte of state) per
// compression: 20 compressions after the first allocate less than one
// writer each. Not parallel, so that no other test allocates meanwhile.
func TestDeflateReusesWriters(t *testing.T) {
	data := bytes.Repeat([]byte("spec: {role: Worker}\n"), 100)
	_ = deflate(data)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		_ = deflate(data)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 20; per > 256<<10 {
		t.Errorf("%d bytes allocated per compression, want under 256 KiB (a new writer is about a megabyte)", per)
	}
}
