package report

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// ring keeps the last max lines. Not safe for concurrent use.
type ring struct {
	max   int
	buf   []string
	next  int
	total int
}

func (g *ring) add(line string) {
	if g.max <= 0 {
		return
	}
	g.total++
	if len(g.buf) < g.max {
		g.buf = append(g.buf, line)
		return
	}
	g.buf[g.next] = line
	g.next = (g.next + 1) % g.max
}

// lines returns the kept lines, oldest first, in a new slice.
func (g *ring) lines() []string {
	out := make([]string, 0, len(g.buf))
	out = append(out, g.buf[g.next:]...)
	return append(out, g.buf[:g.next]...)
}

// AppendOutput records lines of kubeadm or kubelet output for the report's
// log tail. Each line is redacted as it arrives (a Stream per recorder, so
// a PEM block spread over several calls is still caught), cut at
// MaxTailLineLen, and only the last DefaultTailLines are kept. Line breaks
// inside a line split it.
func (r *Recorder) AppendOutput(lines ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finishing {
		return
	}
	for _, l := range lines {
		for _, part := range strings.Split(strings.TrimRight(l, "\r\n"), "\n") {
			r.tail.add(cutLine(r.stream.Line(strings.TrimRight(part, "\r")), MaxTailLineLen))
		}
	}
}

// appendRedacted records lines that were already redacted by a
// redact.Writer of this recorder's redactor.
func (r *Recorder) appendRedacted(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.finishing {
		r.tail.add(cutLine(line, MaxTailLineLen))
	}
}

// OutputWriter returns a writer for a command's output (kubeadm's output
// writer, a kubelet log): what is written is redacted line by line, each
// line is recorded in the log tail, and the redacted bytes are also
// written to tee when tee is not nil (the console or a log). Close it when
// the output ends to record an unterminated last line; it does not close
// tee. The writer is safe for concurrent use.
func (r *Recorder) OutputWriter(tee io.Writer) io.WriteCloser {
	sink := &tailSink{rec: r, tee: tee}
	return &outputWriter{w: r.red.NewWriter(sink), sink: sink}
}

type outputWriter struct {
	w interface {
		io.Writer
		Flush() error
	}
	sink *tailSink
}

func (o *outputWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

func (o *outputWriter) Close() error {
	err := o.w.Flush()
	o.sink.flush()
	return err
}

// tailSink receives redacted bytes, splits them into lines for the tail
// and copies them to tee.
type tailSink struct {
	rec     *Recorder
	tee     io.Writer
	mu      sync.Mutex
	partial []byte
	teeErr  error
}

func (s *tailSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.rec.appendRedacted(strings.TrimRight(string(s.partial[:i]), "\r"))
		s.partial = s.partial[i+1:]
	}
	s.partial = append([]byte(nil), s.partial...)
	// A failing tee (a closed console) must not stop the recording.
	if s.tee != nil && s.teeErr == nil {
		_, s.teeErr = s.tee.Write(p)
	}
	return len(p), nil
}

func (s *tailSink) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.partial) > 0 {
		s.rec.appendRedacted(string(s.partial))
		s.partial = nil
	}
}

// cutLine shortens s to at most n bytes, ending in "..." when cut, without
// splitting a UTF-8 sequence.
func cutLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
