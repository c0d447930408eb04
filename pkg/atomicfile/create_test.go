package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Create never replaces what is at the path: a file, a directory or a
// symbolic link (dangling too, so a link planted at the path is not
// followed), and it leaves no temporary file behind either way.
func TestCreateNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	if err := Create(p, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat: %v %v", fi, err)
	}
	if err := Create(p, []byte("second\n"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Create: %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "first\n" {
		t.Errorf("key replaced: %q", b)
	}
	target := filepath.Join(dir, "elsewhere")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := Create(link, []byte("x"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create through a dangling link: %v, want ErrExist", err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("the link was followed: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("entries left: %v", ents)
	}
}

// Of many Creates of one path at once, exactly one succeeds and the file
// holds its data whole (the race the Lstat-then-rename of pki
// encryption-key --out lost: the later rename replaced the first key).
func TestCreateConcurrentOneWins(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Create(p, fmt.Appendf(nil, "key %02d\n", i), 0o600)
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("both %d and %d created the file", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, fs.ErrExist):
			t.Errorf("Create %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no Create succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != fmt.Sprintf("key %02d\n", won) {
		t.Errorf("file holds %q, the winner was %d", b, won)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}
