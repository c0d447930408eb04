// Package stdio redirects the process's standard streams while kubeadm
// runs in-process: kubeadm prints with fmt.Printf and klog as well as to
// the writers it is given. The run and pki packages share its lock.
package stdio

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"unicode/utf8"
)

// Mu serialises kubeadm's in-process runs (phases, pki init): kubeadm
// writes to the process's standard streams, which Capture redirects while
// one runs. Hold it around Capture.
var Mu sync.Mutex

// Capture runs fn with os.Stdout and os.Stderr redirected into a pipe
// whose lines go to sink, each cut at maxLine saying so (lines); kubeadm
// prints with fmt.Printf and klog as well as to the writers it is given.
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

// maxLine is the most of a line's own bytes the sink gets.
const maxLine = 1024 * 1024

// lines passes each line of r to sink, without its end ("\n" or
// "\r\n"), a line longer than maxLine cut there (at the start of a
// UTF-8 sequence) and ending in what was cut ("... [N bytes cut]", cut):
// the rest of that line is dropped, not the lines after it (an over-long
// line, such as a webhook's message kubeadm prints, must not hide
// kubeadm's own lines after it from the classification of a failure),
// and the console and the report say the line is not whole.
func lines(r io.Reader, sink func(string)) {
	br := bufio.NewReaderSize(r, 64*1024)
	var line []byte
	dropped := 0     // bytes of the line past maxLine
	pending := false // a line's first chunks were read, not its end
	end := func() {
		sink(cut(line, dropped))
		line, dropped = line[:0], 0
	}
	for {
		chunk, more, err := br.ReadLine()
		if err != nil {
			// A last line without a newline whose length is a multiple
			// of the buffer's came whole in chunks with more set: it
			// ends here.
			if pending {
				end()
			}
			return
		}
		n := min(len(chunk), maxLine-len(line))
		line = append(line, chunk[:n]...)
		dropped += len(chunk) - n
		pending = more
		if !more {
			end()
		}
	}
}

// cut is line, the first maxLine bytes of a line, and what was cut when
// dropped bytes followed them: the line back to the start of its last
// UTF-8 sequence when that sequence may be incomplete, then
// "... [N bytes cut]".
func cut(line []byte, dropped int) string {
	if dropped == 0 {
		return string(line)
	}
	n := len(line)
	for i := n - 1; i >= 0 && i >= n-utf8.UTFMax; i-- {
		if utf8.RuneStart(line[i]) {
			if !utf8.FullRune(line[i:]) {
				n = i
			}
			break
		}
	}
	return fmt.Sprintf("%s... [%d bytes cut]", line[:n], dropped+len(line)-n)
}
