package readlimit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testfifo"
)

func TestFileRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := File(p, 5)
	if err != nil || string(got) != "hello" {
		t.Fatalf("File at the limit: %q, %v", got, err)
	}
	_, err = File(p, 4)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != 5 || tl.Limit != 4 || !IsTooLarge(err) {
		t.Fatalf("File over the limit: %v, want a TooLargeError of 5 bytes", err)
	}
	if _, err := File(filepath.Join(t.TempDir(), "missing"), 4); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestFileRefusesDevicesFIFOsAndDirectories(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	testfifo.Make(t, fifo)
	for name, path := range map[string]string{"/dev/zero": "/dev/zero", "fifo": fifo, "dir": t.TempDir()} {
		// A FIFO without a writer would block a plain open forever; the
		// test binary's own timeout catches a regression.
		_, err := File(path, 1<<20)
		var nr *NotRegularError
		if !errors.As(err, &nr) {
			t.Errorf("%s: %v, want a NotRegularError", name, err)
		}
	}
	_, err := File(fifo, 1)
	if !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("FIFO error %q does not say what it is", err)
	}
}

func TestReaderStream(t *testing.T) {
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	if _, err := Reader(zero, 1<<20); !IsTooLarge(err) {
		t.Fatalf("/dev/zero as a stream: %v, want TooLargeError", err)
	}
	got, err := Reader(strings.NewReader("abc"), 3)
	if err != nil || string(got) != "abc" {
		t.Fatalf("stream at the limit: %q, %v", got, err)
	}
}
