//go:build !windows

package files

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// big is content over InlineMax, every byte set from its offset.
func big(n int, last byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	b[n-1] = last
	return b
}

func TestReadStateLeavesLargeContentOnTheHost(t *testing.T) {
	dir := t.TempDir()
	small, large := filepath.Join(dir, "small"), filepath.Join(dir, "large")
	must(t, os.WriteFile(small, []byte("x"), 0o644))
	content := big(InlineMax+1, 9)
	must(t, os.WriteFile(large, content, 0o755))

	st, err := ReadState(small)
	if err != nil || string(st.Content) != "x" || st.Len() != 1 {
		t.Fatalf("small: %q len %d, %v", st.Content, st.Len(), err)
	}
	st, err = ReadState(large)
	if err != nil || st.Content != nil || st.Len() != int64(len(content)) || st.Mode != 0o755 {
		t.Fatalf("large: content held %v, len %d, mode %v, %v", st.Content != nil, st.Len(), st.Mode, err)
	}
	loaded, err := st.Load()
	if err != nil || !bytes.Equal(loaded.Content, content) || loaded.Len() != int64(len(content)) {
		t.Fatalf("Load: %d bytes, %v", len(loaded.Content), err)
	}
}

// TestLargeContentComparedToTheEnd: files of the same size that differ
// anywhere, last byte included, are different; the same bytes are not,
// whether held in memory, left on the host or staged in a Blob.
func TestLargeContentComparedToTheEnd(t *testing.T) {
	dir := t.TempDir()
	n := InlineMax + 3*copyBuf + 5 // a short last piece
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	must(t, os.WriteFile(a, big(n, 1), 0o644))
	must(t, os.WriteFile(b, big(n, 1), 0o644))
	stage := func(content []byte) *Blob {
		p := filepath.Join(t.TempDir(), "src")
		must(t, os.WriteFile(p, content, 0o644))
		bl, err := Fetch(context.Background(), nil, "/", "file://"+p, sum(content))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bl.Close() })
		return bl
	}
	cur := func(p string) State {
		st, err := ReadState(p)
		must(t, err)
		return st
	}
	for _, c := range []struct {
		name    string
		old     State
		desired Desired
		changed bool
	}{
		{"same file content", cur(a), Desired{Path: "/b", Content: big(n, 1), Mode: 0o644}, false},
		{"last byte differs", cur(a), Desired{Path: "/b", Content: big(n, 2), Mode: 0o644}, true},
		{"one byte longer", cur(a), Desired{Path: "/b", Content: big(n+1, 1), Mode: 0o644}, true},
		{"blob, same", cur(b), Desired{Path: "/b", Blob: stage(big(n, 1)), Mode: 0o644}, false},
		{"blob, last byte differs", cur(b), Desired{Path: "/b", Blob: stage(big(n, 3)), Mode: 0o644}, true},
		{"blob over held content", State{Exists: true, Content: big(n, 1), Mode: 0o644}, Desired{Path: "/b", Blob: stage(big(n, 1)), Mode: 0o644}, false},
		{"small blob, different", State{Exists: true, Content: []byte("a\n"), Mode: 0o644}, Desired{Path: "/b", Blob: stage([]byte("b\n")), Mode: 0o644}, true},
	} {
		ch := Plan(c.desired, b, c.old)
		if ch.ContentChanged() != c.changed || ch.Changed() != c.changed {
			t.Errorf("%s: changed %v, want %v", c.name, ch.ContentChanged(), c.changed)
		}
	}
}

func TestApplyWritesABlob(t *testing.T) {
	dir := t.TempDir()
	content := big(InlineMax*2, 5)
	src := filepath.Join(dir, "src")
	must(t, os.WriteFile(src, content, 0o644))
	bl, err := Fetch(context.Background(), nil, "/", "file://"+src, sum(content))
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	if bl.Size() != int64(len(content)) {
		t.Errorf("Size %d, want %d", bl.Size(), len(content))
	}
	dst := filepath.Join(dir, "sub", "dst")
	// Written twice from the same Blob (a Blob is read any number of times).
	for i := range 2 {
		if i == 1 {
			must(t, os.WriteFile(dst, []byte("other"), 0o644))
		}
		cur, err := ReadState(dst)
		must(t, err)
		ch := Plan(Desired{Path: "/sub/dst", Blob: bl, Mode: 0o750}, dst, cur)
		if !strings.HasSuffix(ch.Summary(), "(0750, 0:0, 2097152 bytes)") {
			t.Errorf("summary %q", ch.Summary())
		}
		must(t, Apply(Plan(Desired{Path: "/sub/dst", Blob: bl, Mode: 0o750, UID: os.Getuid(), GID: os.Getgid()}, dst, cur)))
		got, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("write %d: %d bytes, %v", i, len(got), err)
		}
		if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o750 {
			t.Errorf("mode %v", fi.Mode().Perm())
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "sub")); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// TestFetchStagesNothingVisible: the staged copy is not left in the
// temporary directory, neither on success nor on a digest mismatch.
func TestFetchStagesNothingVisible(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.WriteFile(src, []byte("payload"), 0o644))
	bl, err := Fetch(context.Background(), nil, "/", "file://"+src, sum([]byte("payload")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(context.Background(), nil, "/", "file://"+src, sum([]byte("other"))); !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("mismatch: %v", err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("staged files visible in TMPDIR: %v", ents)
	}
	if got := blobString(t, bl); got != "payload" {
		t.Errorf("blob %q", got)
	}
}

func TestFetchRefusesAnUnwritableStagingDirectory(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.WriteFile(src, []byte("p"), 0o644))
	if _, err := Fetch(context.Background(), nil, "/", "file://"+src, sum([]byte("p"))); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "staging") {
		t.Errorf("error = %v, want ErrUnavailable naming the staging", err)
	}
}

// TestLoadReadsAFileThatGrew: a large file left on the host by ReadState
// and appended to before Load (a log, a file another agent writes) is
// read to its end: an Append planned from it keeps every byte the file has.
func TestLoadReadsAFileThatGrew(t *testing.T) {
	p := filepath.Join(t.TempDir(), "grows")
	content := big(InlineMax+10, 1)
	must(t, os.WriteFile(p, content, 0o644))
	cur, err := ReadState(p)
	must(t, err)
	more := big(InlineMax/2, 2)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.Write(more)
	must(t, err)
	must(t, f.Close())
	cur, err = cur.Load()
	must(t, err)
	c := Plan(Desired{Path: "/grows", Content: []byte("tail\n"), Mode: 0o644, Append: true, UID: os.Getuid(), GID: os.Getgid()}, p, cur)
	must(t, Apply(c))
	got, err := os.ReadFile(p)
	must(t, err)
	want := append(append(append([]byte{}, content...), more...), "tail\n"...)
	if !bytes.Equal(got, want) {
		t.Errorf("after the append the file has %d bytes, want %d (the bytes it grew by are kept)", len(got), len(want))
	}
}

// TestContentReadFromTheFileExamined: ReadState looked at a regular file;
// if the path is then replaced by a symlink (to a key, say), the content
// read later for the comparison or an append is not the link's target's:
// Load fails and the comparison counts the content as different.
func TestContentReadFromTheFileExamined(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "key")
	must(t, os.WriteFile(secret, big(InlineMax+10, 7), 0o600))
	for _, size := range []int{InlineMax + 10, 10} {
		p := filepath.Join(dir, "target")
		must(t, os.WriteFile(p, big(size, 1), 0o644))
		cur, err := ReadState(p)
		must(t, err)
		must(t, os.Remove(p))
		must(t, os.Symlink(secret, p))
		l, err := cur.Load()
		if err == nil && bytes.Equal(l.Content, big(InlineMax+10, 7)) {
			t.Errorf("size %d: Load read the symlink's target", size)
		}
		d := Desired{Path: "/target", Content: big(InlineMax+10, 7), Mode: 0o644, UID: os.Getuid(), GID: os.Getgid()}
		if size > InlineMax && !Plan(d, p, cur).ContentChanged() {
			t.Errorf("size %d: the symlink's target was compared as the file's content", size)
		}
		must(t, os.Remove(p))
	}
}
