package redact

import (
	"bytes"
	"io"
	"sync"
)

// MaxLineLen is the longest line, in bytes, a Writer buffers while waiting
// for its line break. A longer line is cut at its last blank (space or tab)
// before the limit, or at the limit when it has none, and the part is
// redacted and written as if it were a line; secrets contain no blanks, so
// a cut at a blank never splits one.
const MaxLineLen = 64 << 10

// Writer is an io.WriteCloser that redacts what is written to it line by
// line and passes the result to an underlying writer. Bytes are held until
// their line is complete, so a secret split across several Write calls is
// still found; Close (or Flush) writes the last, unterminated line. Writer
// is safe for concurrent use; concurrent writers' bytes interleave as they
// arrive, as with any shared stream.
type Writer struct {
	mu     sync.Mutex
	out    io.Writer
	stream *Stream
	buf    []byte
	err    error
}

// NewWriter returns a Writer that redacts with r and writes to out.
func (r *Redactor) NewWriter(out io.Writer) *Writer {
	return &Writer{out: out, stream: r.NewStream()}
}

// Write buffers p, then redacts and writes every complete line. It returns
// len(p) unless the underlying writer failed, in which case that error is
// returned now and on every later call.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, p...)
	var out []byte
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		out = w.appendLine(out, w.buf[:i], true)
		w.buf = w.buf[i+1:]
	}
	for len(w.buf) > MaxLineLen {
		cut := bytes.LastIndexAny(w.buf[:MaxLineLen], " \t")
		if cut <= 0 {
			cut = MaxLineLen
		}
		out = w.appendLine(out, w.buf[:cut], false)
		w.buf = w.buf[cut:]
	}
	// Keep the remainder in a buffer of its own so the array of a long
	// past write is not retained.
	w.buf = append([]byte(nil), w.buf...)
	if len(out) > 0 {
		if _, err := w.out.Write(out); err != nil {
			w.err = err
			return 0, err
		}
	}
	return len(p), nil
}

// appendLine redacts one line (without its line break) and appends it,
// with a line break when newline is set, to out. A "\r" before the line
// break is kept.
func (w *Writer) appendLine(out, line []byte, newline bool) []byte {
	cr := newline && len(line) > 0 && line[len(line)-1] == '\r'
	if cr {
		line = line[:len(line)-1]
	}
	out = append(out, w.stream.Line(string(line))...)
	if cr {
		out = append(out, '\r')
	}
	if newline {
		out = append(out, '\n')
	}
	return out
}

// Flush redacts and writes a pending unterminated line. Call it only when
// the text is known to be complete up to here (the line is redacted as a
// whole, so a secret whose rest arrives later would be missed).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	out := w.appendLine(nil, w.buf, false)
	w.buf = nil
	if _, err := w.out.Write(out); err != nil {
		w.err = err
	}
	return w.err
}

// Close flushes the pending line. It does not close the underlying writer.
func (w *Writer) Close() error { return w.Flush() }
