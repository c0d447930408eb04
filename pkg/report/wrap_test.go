package report

import (
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestWrapLongWord: a 1 MB word (a label value quoted in an error) is cut
// into full lines that together hold it unchanged, and wrapping it
// allocates memory linear in its size. The quadratic version allocated the
// rest of the word again for every line: about 5 GB for 1 MB.
func TestWrapLongWord(t *testing.T) {
	word := strings.Repeat("ab✓", 1<<20/5)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	lines := wrap("error: ", "x "+word+" tail", ScreenWidth, 0)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64*uint64(len(word)) {
		t.Errorf("wrapping %d bytes allocated %d bytes", len(word), alloc)
	}
	var b strings.Builder
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > ScreenWidth {
			t.Fatalf("line %d has %d characters", i, n)
		}
		if i > 0 && !strings.HasPrefix(l, "       ") {
			t.Fatalf("line %d is not indented: %q", i, l)
		}
		if i > 0 {
			l = l[len("       "):]
		}
		b.WriteString(l)
	}
	if got := b.String(); !strings.HasPrefix(got, "error: x"+word) || !strings.HasSuffix(got, "tail") {
		t.Errorf("the text did not survive wrapping")
	}
	if lines[0] != "error: x" {
		t.Errorf("first line %q, want the short word alone before the long one", lines[0])
	}
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, " tail") {
		t.Errorf("last line %q", last)
	}
}

func TestWrapKeepsShape(t *testing.T) {
	got := wrap("hint:  ", "one two three\nfour "+strings.Repeat("x", 250), 40, 0)
	want := []string{
		"hint:  one two three",
		"       four",
		"       " + strings.Repeat("x", 33),
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("line %d: %q, want %q", i, got[i], w)
		}
	}
	if cut := wrap("error: ", strings.Repeat("word ", 100), 40, 3); len(cut) != 3 || !strings.HasPrefix(cut[1], "   ... ") {
		t.Errorf("max lines: %q", cut)
	}
}

// BenchmarkWrap wraps a 10 KB and a 1 MB word; the time per byte of the
// two is about equal (linear), where the quadratic version was about 100
// times slower per byte at 1 MB.
func BenchmarkWrap(b *testing.B) {
	for _, size := range []int{10 << 10, 1 << 20} {
		word := strings.Repeat("a", size)
		b.Run(byteSize(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				wrap("error: ", word, ScreenWidth, 0)
			}
		})
	}
}

func byteSize(n int) string {
	if n >= 1<<20 {
		return "1MB"
	}
	return "10KB"
}
