// Package stdio redirects the process's standard streams while kubeadm
// runs in-process: kubeadm prints with fmt.Printf and klog as well as to
// the writers it is given. The run and pki packages share its lock.
package stdio

import (
	"bufio"
	"io"
	"os"
	"sync"
)

// Mu serialises kubeadm's in-process runs (phases, pki init): kubeadm
// writes to the process's standard streams, which Capture redirects while
// one runs. Hold it around Capture.
var Mu sync.Mutex

// Capture runs fn with os.Stdout and os.Stderr redirected into a pipe
// whose lines go to sink, each cut at maxLine (lines); kubeadm prints with fmt.Printf and klog as well
// as to the writers it is given.
func Capture(sink func(string), fn func(out, errOut io.Writer) error) error {
	if sink == nil {
		sink = func(string) {}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		lines(pr, sink)
		// Drain anything after a read error so kubeadm never blocks.
		_, _ = io.Copy(io.Discard, pr)
	}()
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = pw, pw
	defer func() {
		os.Stdout, os.Stderr = oldOut, oldErr
		pw.Close()
		<-done
		pr.Close()
	}()
	return fn(pw, pw)
}

// maxLine is the most of a line the sink gets.
const maxLine = 1024 * 1024

// lines passes each line of r to sink, without its end ("\n" or
// "\r\n"), a line longer than maxLine cut there: the rest of that line
// is dropped, not the lines after it (an over-long line, such as a
// webhook's message kubeadm prints, must not hide kubeadm's own lines
// after it from the classification of a failure).
func lines(r io.Reader, sink func(string)) {
	br := bufio.NewReaderSize(r, 64*1024)
	var line []byte
	pending := false // a line's first chunks were read, not its end
	for {
		chunk, more, err := br.ReadLine()
		if err != nil {
			// A last line without a newline whose length is a multiple
			// of the buffer's came whole in chunks with more set: it
			// ends here.
			if pending {
				sink(string(line))
			}
			return
		}
		if n := min(len(chunk), maxLine-len(line)); n > 0 {
			line = append(line, chunk[:n]...)
		}
		pending = more
		if !more {
			sink(string(line))
			line = line[:0]
		}
	}
}
