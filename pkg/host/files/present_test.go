package files

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPresent: a regular file with the pinned content is a Blob of that
// file, which a Plan against the file finds unchanged and whose later
// read refuses a changed file; anything else (other content, a symlink to
// the content, a directory, nothing) is nil, for the caller to fetch.
func TestPresent(t *testing.T) {
	dir := t.TempDir()
	content := []byte("#!/bin/sh\necho kubelet\n")
	s := sha256.Sum256(content)
	sum := hex.EncodeToString(s[:])
	p := filepath.Join(dir, "kubelet")
	if err := os.WriteFile(p, content, 0o755); err != nil {
		t.Fatal(err)
	}

	b := Present("", "https://example.invalid/kubelet", p, sum)
	if b == nil {
		t.Fatal("Present: nil for a file with the pinned content")
	}
	defer b.Close()
	if b.Size() != int64(len(content)) {
		t.Errorf("Size %d, want %d", b.Size(), len(content))
	}
	cur, err := ReadState(p)
	if err != nil {
		t.Fatal(err)
	}
	c := Plan(Desired{Path: "/usr/bin/kubelet", Blob: b, Mode: cur.Mode, UID: cur.UID, GID: cur.GID}, p, cur)
	if c.Changed() {
		t.Errorf("Plan against the file itself: %s", c.Summary())
	}
	r, err := b.Reader()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(r); err != nil || string(got) != string(content) {
		t.Errorf("Reader: %q, %v", got, err)
	}
	// Changed in place since (same inode): a read refuses it.
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho other\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reader(); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("Reader after the file changed: %v, want ErrDigestMismatch", err)
	}

	if Present("", "https://example.invalid/kubelet", p, sum) != nil {
		t.Error("Present: a Blob for a file with other content")
	}
	target := filepath.Join(dir, "real")
	if err := os.WriteFile(target, content, 0o755); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		link := filepath.Join(dir, "link")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if b := Present("", "https://example.invalid/kubelet", link, sum); b != nil {
			b.Close()
			t.Error("Present followed a symlink to the pinned content")
		}
	}
	// A file:// source of the same size (under root): the destination
	// is read and stands for it.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "opt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "opt/kubelet"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if b := Present(root, "file:///opt/kubelet", target, sum); b == nil {
		t.Error("Present: nil for a file with the content of a file:// source of its size")
	} else {
		b.Close()
	}
	if Present("", "https://example.invalid/kubelet", dir, sum) != nil {
		t.Error("Present: a Blob for a directory")
	}
	if Present("", "https://example.invalid/kubelet", filepath.Join(dir, "missing"), sum) != nil {
		t.Error("Present: a Blob for a missing file")
	}
}

// TestPresentFileSourceOtherSize: a file:// source whose size differs
// from the destination's (an upgrade's new kubelet) does not let the
// destination stand for it, even when the destination has the pinned
// content: the destination is not read, and the caller fetches (and
// checks) the source. Of the same size, the destination is read.
func TestPresentFileSourceOtherSize(t *testing.T) {
	root := t.TempDir()
	content := []byte("#!/bin/sh\necho kubelet\n")
	s := sha256.Sum256(content)
	sum := hex.EncodeToString(s[:])
	if err := os.MkdirAll(filepath.Join(root, "opt"), 0o755); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(root, "opt/dest")
	if err := os.WriteFile(dest, content, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "opt/kubelet")
	if err := os.WriteFile(src, append(content, "# one more line\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if b := Present(root, "file:///opt/kubelet", dest, sum); b != nil {
		b.Close()
		t.Error("Present: a Blob for a file:// source of another size than the destination")
	}
	if err := os.WriteFile(src, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if b := Present(root, "file:///opt/kubelet", dest, sum); b == nil {
		t.Error("Present: nil for a file:// source of the destination's size and content")
	} else {
		b.Close()
	}
}

// TestPresentChangedBeforeApply: a destination found in place at the
// check and changed in place by something else before it is written
// (same inode) is refused by Apply, which writes nothing and says the
// file changed during the run, rather than writing back what is there.
func TestPresentChangedBeforeApply(t *testing.T) {
	dir := t.TempDir()
	content := []byte("pinned content\n")
	s := sha256.Sum256(content)
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	b := Present("", "https://example.invalid/f", p, hex.EncodeToString(s[:]))
	if b == nil {
		t.Fatal("Present: nil for a file with the pinned content")
	}
	defer b.Close()
	other := []byte("other  content\n")
	if err := os.WriteFile(p, other, 0o644); err != nil {
		t.Fatal(err)
	}
	cur, err := ReadState(p)
	if err != nil {
		t.Fatal(err)
	}
	c := Plan(Desired{Path: "/f", Blob: b, Mode: 0o644, UID: cur.UID, GID: cur.GID}, p, cur)
	err = Apply(c)
	if !errors.Is(err, ErrDigestMismatch) || !strings.Contains(err.Error(), "changed it since") {
		t.Errorf("Apply after the destination changed in place: %v, want ErrDigestMismatch saying it changed", err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(other) {
		t.Errorf("%s: %q, want what the other writer left", p, got)
	}
}

// TestPresentChangedWhileRead: a destination found in place (with text
// appended after the source's part) and changed in place after Reader
// checked it, while its content is read, is refused at the end of the
// read (ErrDigestMismatch) rather than taken for the content checked.
func TestPresentChangedWhileRead(t *testing.T) {
	dir := t.TempDir()
	content := []byte("pinned content\n")
	s := sha256.Sum256(content)
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, append(append([]byte{}, content...), "x\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	b := Present("", "https://example.invalid/f", p, hex.EncodeToString(s[:]), []byte("x\n"))
	if b == nil {
		t.Fatal("Present: nil for a file with the pinned content and the appended text")
	}
	defer b.Close()
	r, err := b.Reader()
	if err != nil {
		t.Fatal(err)
	}
	// Written in place (the same inode) after the check.
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("P"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(r); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("read %q, %v; want ErrDigestMismatch", got, err)
	}
}
