package leakcheck

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCheckRendered checks every rendered golden file of pkg/render
// as the controller does (two known values, KnownOnly).
func BenchmarkCheckRendered(b *testing.B) {
	files, _ := filepath.Glob("../../render/testdata/worker*")
	var data [][]byte
	for _, f := range files {
		if d, err := os.ReadFile(f); err == nil {
			data = append(data, d)
		}
	}
	if len(data) == 0 {
		b.Skip("no rendered files")
	}
	known := [][]byte{[]byte("abcdef.0123456789abcdef"), []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")}
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range data {
			if f := Check(d, Options{Known: known, KnownOnly: true}); len(f) != 0 {
				b.Fatal(f)
			}
		}
	}
}
