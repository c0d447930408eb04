package files

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

// TestPresentWithAppends: with the content of the entries that append to
// the path, Present finds the source's content followed by what they
// add (each piece unless the content so far contains it) and returns
// the source's part; a file that is not exactly that (the source alone
// when a piece is to be added, a piece twice, pieces out of order, other
// content, a file:// source of another size) is nil. Plan with the same
// appends finds such a file unchanged.
func TestPresentWithAppends(t *testing.T) {
	dir := t.TempDir()
	// Larger than a read piece (copyBuf), so that a piece is searched
	// across pieces.
	base := bytes.Repeat([]byte("0123456789abcdef"), (copyBuf+100)/16)
	base = append(base, "\nin base\n"...)
	s := sha256.Sum256(base)
	sum := hex.EncodeToString(s[:])
	x, y, inBase := []byte("x = 1\n"), []byte("y = 2\n"), []byte("f0123456789abcdef0")
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, base, 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "conf")
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name    string
		file    []byte
		appends [][]byte
		found   bool
	}{
		{"one added", cat(base, x), [][]byte{x}, true},
		{"two added", cat(base, x, y), [][]byte{x, y}, true},
		{"one in the base", cat(base, x, y), [][]byte{x, inBase, y}, true},
		{"one added twice in the spec", cat(base, x), [][]byte{x, x}, true},
		{"empty piece", cat(base, x), [][]byte{{}, x}, true},
		{"none", base, nil, true},
		{"source alone", base, [][]byte{x}, false},
		{"added twice", cat(base, x, x), [][]byte{x}, false},
		{"out of order", cat(base, y, x), [][]byte{x, y}, false},
		{"one missing", cat(base, x), [][]byte{x, y}, false},
		{"piece in the base added", cat(base, inBase), [][]byte{inBase}, false},
		{"other content", cat([]byte("other\n"), x), [][]byte{x}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(p, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, url := range []string{"https://example.invalid/conf", "file:///src"} {
				b := Present(dir, url, p, sum, tc.appends...)
				if (b != nil) != tc.found {
					t.Fatalf("Present(%s): found %v, want %v", url, b != nil, tc.found)
				}
				if b == nil {
					continue
				}
				r, err := b.Reader()
				if err != nil {
					t.Fatal(err)
				}
				if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, base) {
					t.Errorf("Reader: %d bytes, %v; want the source's %d", len(got), err, len(base))
				}
				cur, err := ReadState(p)
				if err != nil {
					t.Fatal(err)
				}
				c := Plan(Desired{Path: "/etc/conf", Blob: b, Appends: tc.appends, Mode: cur.Mode, UID: cur.UID, GID: cur.GID}, p, cur)
				if c.Changed() {
					t.Errorf("Plan against the file itself: %s", c.Summary())
				}
				b.Close()
			}
		})
	}
	// A file:// source of another size is not read for.
	if err := os.WriteFile(src, cat(base, []byte("more")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, cat(base, x), 0o644); err != nil {
		t.Fatal(err)
	}
	if b := Present(dir, "file:///src", p, sum, x); b != nil {
		b.Close()
		t.Error("Present found the content though the file:// source's size differs")
	}
}

// TestPlanAppendsToABlob: a Blob followed by appends is written with
// each piece the Blob's content does not contain, in order; the result
// is read from the Blob and never held whole.
func TestPlanAppendsToABlob(t *testing.T) {
	dir := t.TempDir()
	base := bytes.Repeat([]byte("abcdefgh"), copyBuf/8+3)
	s := sha256.Sum256(base)
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, base, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Fetch(t.Context(), nil, dir, "file:///src", hex.EncodeToString(s[:]))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p := filepath.Join(dir, "conf")
	x, inBase := []byte("x\n"), []byte("habcdefgha")
	c := Plan(Desired{Path: "/conf", Blob: b, Appends: [][]byte{x, inBase, x}, Mode: 0o644, UID: os.Getuid(), GID: os.Getgid()}, p, State{})
	if c.New.Content != nil {
		t.Errorf("the content was read into memory (%d bytes)", len(c.New.Content))
	}
	if err := Apply(c); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]byte{}, base...), x...); !bytes.Equal(got, want) {
		t.Errorf("wrote %d bytes (suffix %q), want %d ending in %q", len(got), got[max(0, len(got)-4):], len(want), x)
	}
}

// TestReaderContains: a piece is found wherever it is, across the
// pieces the content is read in too.
func TestReaderContains(t *testing.T) {
	needle := []byte("needle")
	for _, at := range []int{0, copyBuf - 3, copyBuf - len(needle), copyBuf, 2*copyBuf - 1, 3 * copyBuf} {
		data := make([]byte, 3*copyBuf+len(needle))
		copy(data[at:], needle)
		if ok, err := readerContains(bytes.NewReader(data), needle); !ok || err != nil {
			t.Errorf("needle at %d: %v, %v", at, ok, err)
		}
		if ok, err := readerContains(bytes.NewReader(data), []byte("needles")); ok || err != nil {
			t.Errorf("absent needle with one at %d: %v, %v", at, ok, err)
		}
	}
}

// repetitiveAppend is a source of size bytes that repeats a 64-byte
// pattern (its first byte once in it), and an append text of n bytes
// that is the source's first n-1 bytes followed by a byte not in it: the
// text is not in the source, and every place the pattern starts at
// matches all but its last byte.
func repetitiveAppend(size, n int) (source, text []byte) {
	pattern := make([]byte, 64)
	for i := range pattern {
		pattern[i] = 'A' + byte(i)
	}
	source = bytes.Repeat(pattern, size/len(pattern))
	text = append(bytes.Clone(source[:n-1]), '\n')
	return source, text
}

// BenchmarkAppendSearch: whether a 1 MiB append text is in a 64 MiB
// repetitive source, as a source read in pieces (a Blob, a file found in
// place: readerContains) and as content in memory (Plan of an append
// entry). The time grows with the source's size alone, not with the
// product of the sizes.
func BenchmarkAppendSearch(b *testing.B) {
	source, text := repetitiveAppend(64<<20, 1<<20)
	b.Run("stream", func(b *testing.B) {
		b.SetBytes(int64(len(source)))
		for b.Loop() {
			if ok, err := readerContains(bytes.NewReader(source), text); ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	// The worst case for the matcher: one byte repeated, the text all
	// of it but its last byte (each byte of the source a partial match
	// of every length).
	b.Run("periodic", func(b *testing.B) {
		source := bytes.Repeat([]byte("a"), 64<<20)
		text := append(bytes.Repeat([]byte("a"), 1<<20-1), 'b')
		b.SetBytes(int64(len(source)))
		for b.Loop() {
			if ok, err := readerContains(bytes.NewReader(source), text); ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("memory", func(b *testing.B) {
		b.SetBytes(int64(len(source)))
		cur := State{Exists: true, Content: source, Mode: 0o644}
		for b.Loop() {
			if c := Plan(Desired{Path: "/f", Content: text, Mode: 0o644, Append: true}, "/f", cur); !c.ContentChanged() {
				b.Fatal("the text was found")
			}
		}
	})
}

// TestContains: contains and readerContains agree with bytes.Contains
// on random content over a small alphabet (many partial matches), the
// content given in pieces of every length.
func TestContains(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	word := func(n int) []byte {
		w := make([]byte, n)
		for i := range w {
			w[i] = "ab"[rnd.IntN(2)]
		}
		return w
	}
	for range 5000 {
		hay, needle := word(rnd.IntN(40)), word(rnd.IntN(8))
		want := bytes.Contains(hay, needle)
		if got := contains(hay, needle); got != want {
			t.Fatalf("contains(%q, %q) = %v", hay, needle, got)
		}
		piece := 1 + rnd.IntN(5)
		if got, err := readerContains(iotest.OneByteReader(bytes.NewReader(hay)), needle); got != want || err != nil {
			t.Fatalf("readerContains(%q, %q) = %v, %v", hay, needle, got, err)
		}
		m := newMatcher(append(needle, 'a'))
		got := false
		for i := 0; i < len(hay) && !got; i += piece {
			got = m.write(hay[i:min(i+piece, len(hay))])
		}
		if want := bytes.Contains(hay, append(needle, 'a')); got != want {
			t.Fatalf("matcher %q in pieces of %d of %q: %v", append(needle, 'a'), piece, hay, got)
		}
	}
	source, text := repetitiveAppend(1<<20, 64<<10)
	if contains(source, text) || !contains(source, text[:len(text)-1]) {
		t.Error("the repetitive source")
	}
}
