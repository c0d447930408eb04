package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFromOwned(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	content := strings.Repeat("0123456789", 100_000) // larger than any copy buffer
	if err := WriteFromOwned(p, strings.NewReader(content), 0o750, -1, -1); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != content || fi.Mode().Perm() != 0o750 {
		t.Errorf("got %d bytes, mode %v", len(b), fi.Mode().Perm())
	}
}

// failingReader gives some bytes, then an error.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("source went away")
	}
	n := min(len(p), r.n)
	r.n -= n
	return n, nil
}

// TestWriteFromReadErrorKeepsOld: a source that fails half-way leaves the
// old file and no temporary file.
func TestWriteFromReadErrorKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFromOwned(p, io.MultiReader(strings.NewReader("new"), &failingReader{n: 1 << 20}), 0o644, -1, -1)
	if err == nil || !strings.Contains(err.Error(), "source went away") {
		t.Errorf("error = %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("old file changed: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}
