//go:build !windows

package main

import (
	"bytes"
	"errors"
	"testing"
)

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A log file that cannot be written does not keep the line from standard
// error (the journal), and the error is still returned.
func TestBothWriterWritesSecondWhenFirstFails(t *testing.T) {
	var stderr bytes.Buffer
	n, err := bothWriter{failingWriter{}, &stderr}.Write([]byte("fake-kms-plugin: decrypt #1\n"))
	if got := stderr.String(); got != "fake-kms-plugin: decrypt #1\n" {
		t.Errorf("standard error got %q", got)
	}
	if err == nil {
		t.Errorf("the file's error was dropped (n=%d)", n)
	}
}

func TestBothWriterWritesBoth(t *testing.T) {
	var file, stderr bytes.Buffer
	line := []byte("fake-kms-plugin: encrypt #1\n")
	if n, err := (bothWriter{&file, &stderr}).Write(line); err != nil || n != len(line) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if file.String() != string(line) || stderr.String() != string(line) {
		t.Errorf("file %q, standard error %q", file.String(), stderr.String())
	}
}
