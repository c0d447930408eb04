package render

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"testing"
)

// A pooled gzip writer's output is byte for byte a new writer's, whatever
// it compressed before (longer, shorter, incompressible or not).
func TestGzipDataReusedWriterSameOutput(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for i, n := range []int{200000, 10, 0, 70000, 3, 150000} {
		data := make([]byte, n)
		for j := range data {
			if i%2 == 0 {
				data[j] = byte(rnd.IntN(256))
			} else {
				data[j] = "abc\n"[rnd.IntN(4)]
			}
		}
		var want bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&want, gzip.BestCompression)
		_, _ = zw.Write(data)
		_ = zw.Close()
		got := gzipData(data)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("input %d (%d bytes): pooled output differs from a new writer's", i, n)
		}
		zr, err := gzip.NewReader(bytes.NewReader(got))
		if err != nil {
			t.Fatal(err)
		}
		back, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("input %d: does not decompress to itself: %v", i, err)
		}
	}
}
