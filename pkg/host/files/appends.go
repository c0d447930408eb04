package files

import (
	"bytes"
	"io"
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
			if !bytes.Contains(content, a) {
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
// bytes.Contains: an empty needle always), reading r in pieces.
func readerContains(r io.Reader, needle []byte) (bool, error) {
	if len(needle) == 0 {
		return true, nil
	}
	keep := len(needle) - 1
	buf := make([]byte, 0, copyBuf+keep)
	for {
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if bytes.Contains(buf, needle) {
			return true, nil
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// The last keep bytes may begin the needle.
		buf = buf[:copy(buf, buf[len(buf)-min(keep, len(buf)):])]
	}
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
