package seal

import (
	"bytes"
	"compress/flate"
	"math/rand/v2"
	"testing"
)

// A pooled compressor's output is byte for byte a new one's, whatever it
// compressed before, and inflates to the input.
func TestDeflateReusedWriterSameOutput(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for i, n := range []int{100000, 7, 0, 40000, 1, 90000} {
		data := make([]byte, n)
		for j := range data {
			if i%2 == 0 {
				data[j] = byte(rnd.IntN(256))
			} else {
				data[j] = "xyz\n"[rnd.IntN(4)]
			}
		}
		var want bytes.Buffer
		w, _ := flate.NewWriter(&want, flate.BestCompression)
		_, _ = w.Write(data)
		_ = w.Close()
		got := deflate(data)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("input %d (%d bytes): pooled output differs from a new compressor's", i, n)
		}
		back, err := inflate(got)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("input %d: does not inflate to itself: %v", i, err)
		}
	}
}
