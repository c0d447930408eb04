package files

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/bits"
)

// withAppends is st with each of appends added at the end of its
// content, in order, unless the content so far already contains it
// (Desired.Appends). Content held in memory stays there; content on disk
// (a Blob) is read to look for each piece, never whole in memory, and
// stays there: st's content then reads it followed by what is added.
// Content that cannot be read gives a State whose content cannot be read
// either (it compares as different, and writing it fails with the
// error).
func withAppends(st State, appends [][]byte) State {
	if st.src == nil {
		content := st.Content
		for _, a := range appends {
			if !contains(content, a) {
				content = append(content[:len(content):len(content)], a...)
			}
		}
		st.Content = content
		return st
	}
	base := st.src
	tail, err := appendTail(base.open, appends)
	switch {
	case err != nil:
		st.src = &source{size: base.size, open: func() (io.ReadCloser, error) { return nil, err }}
	case len(tail) > 0:
		st.src = &source{size: base.size + int64(len(tail)), open: func() (io.ReadCloser, error) {
			r, err := base.open()
			if err != nil {
				return nil, err
			}
			return struct {
				io.Reader
				io.Closer
			}{io.MultiReader(r, bytes.NewReader(tail)), r}, nil
		}}
	}
	return st
}

// appendTail is what appends add to the content open reads (each piece
// unless that content, followed by the pieces added before it, already
// contains it).
func appendTail(open func() (io.ReadCloser, error), appends [][]byte) ([]byte, error) {
	var tail []byte
	for _, a := range appends {
		r, err := open()
		if err != nil {
			return nil, err
		}
		found, err := readerContains(io.MultiReader(r, bytes.NewReader(tail)), a)
		r.Close()
		if err != nil {
			return nil, err
		}
		if !found {
			tail = append(tail, a...)
		}
	}
	return tail, nil
}

// readerContains says whether r's content contains needle (as
// bytes.Contains: an empty needle always), reading r in pieces, each
// byte once (a matcher: time linear in the content's and the needle's
// length, memory four bytes per byte of the needle).
func readerContains(r io.Reader, needle []byte) (bool, error) {
	if len(needle) == 0 {
		return true, nil
	}
	m := newMatcher(needle)
	buf := make([]byte, copyBuf)
	for {
		n, err := r.Read(buf)
		if m.write(buf[:n]) {
			return true, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// contains is bytes.Contains(haystack, needle) in time linear in their
// lengths: bytes.Contains of a long needle compares it at every place
// its first two bytes occur, which takes minutes for a text of 1 MiB
// that a repetitive file of 64 MiB almost contains at each of its
// places.
func contains(haystack, needle []byte) bool {
	return len(needle) == 0 || newMatcher(needle).write(haystack)
}

// matcher looks for needle (not empty) in content given to it in pieces
// (Knuth-Morris-Pratt): each byte is looked at a bounded number of times
// on average, however repetitive the content and the needle.
type matcher struct {
	needle []byte
	// border[i] is the length of the longest proper prefix of
	// needle[:i+1] that is also its suffix.
	border []int32
	// matched is how many of needle's first bytes the content given so
	// far ends with.
	matched int
}

func newMatcher(needle []byte) *matcher {
	border := make([]int32, len(needle))
	k := 0
	for i := 1; i < len(needle); i++ {
		for k > 0 && needle[i] != needle[k] {
			k = int(border[k-1])
		}
		if needle[i] == needle[k] {
			k++
		}
		border[i] = int32(k)
	}
	return &matcher{needle: needle, border: border}
}

// write gives m the next piece of the content and says whether the
// content so far contains the needle (once it did, m is done with).
func (m *matcher) write(p []byte) bool {
	j := m.needle
	k := m.matched
	for i := 0; i < len(p); i++ {
		if k == 0 {
			// Nothing matched: skip to the needle's first byte.
			o := bytes.IndexByte(p[i:], j[0])
			if o < 0 {
				break
			}
			i += o
		}
		// As much of the rest of the needle as follows, at once.
		n := commonPrefix(p[i:], j[k:])
		if k += n; k == len(j) {
			m.matched = k
			return true
		}
		if i += n; i == len(p) {
			break
		}
		for k > 0 && p[i] != j[k] {
			k = int(m.border[k-1])
		}
		if p[i] == j[k] {
			k++
		}
		if k == len(j) {
			m.matched = k
			return true
		}
	}
	m.matched = k
	return false
}

// commonPrefix is the length of the longest common prefix of a and b,
// compared eight bytes at a time.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// appendedOffsets are the lengths the first part of a file of size bytes
// may have when the rest is pieces of appends added after it
// (withAppends), given tail, the file's last bytes (as many as appends
// hold together, or the whole file): size itself (nothing added) and
// every length that leaves, after it, a sequence of appends in their
// order that tail ends with.
func appendedOffsets(tail []byte, size int64, appends [][]byte) []int64 {
	var offs []int64
	seen := map[[2]int]bool{}
	var walk func(end, i int)
	// end: tail[:end] is still to be explained; appends[:i] may explain it.
	walk = func(end, i int) {
		if seen[[2]int{end, i}] {
			return
		}
		seen[[2]int{end, i}] = true
		if i == 0 {
			offs = append(offs, size-int64(len(tail)-end))
			return
		}
		walk(end, i-1)
		// An empty piece is never added: every content contains it.
		if a := appends[i-1]; len(a) > 0 && end >= len(a) && bytes.Equal(tail[end-len(a):end], a) {
			walk(end-len(a), i-1)
		}
	}
	walk(len(tail), len(appends))
	return offs
}
