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
// whose lines go to sink; kubeadm prints with fmt.Printf and klog as well
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
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			sink(sc.Text())
		}
		// Drain anything after an over-long line so kubeadm never blocks.
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
