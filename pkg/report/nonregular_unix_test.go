//go:build unix

package report

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nonRegular makes, under a new root, each kind of thing a report or
// sentinel path may name by mistake that is not a regular file, at
// /x/NAME: a FIFO, an empty directory, a symbolic link to a directory
// (/bin → usr/bin on a merged-/usr system), and, as root, /dev/null's
// character device. It returns the root and the names, each with the
// type bits to find there afterwards.
func nonRegular(t *testing.T) (string, map[string]fs.FileMode) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "x")
	if err := os.MkdirAll(filepath.Join(dir, "usr-bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	made := map[string]fs.FileMode{}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	made["fifo"] = fs.ModeNamedPipe
	if err := os.Mkdir(filepath.Join(dir, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	made["emptydir"] = fs.ModeDir
	if err := os.Symlink("usr-bin", filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	made["bin"] = fs.ModeSymlink
	// makedev(1, 3), /dev/null's numbers; needs CAP_MKNOD.
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		made["null"] = fs.ModeDevice | fs.ModeCharDevice
	} else {
		t.Logf("no character device (%v): tested without it", err)
	}
	return root, made
}

// checkLeft fails t unless each of made is still at root/x in its kind.
func checkLeft(t *testing.T, root string, made map[string]fs.FileMode, what string) {
	t.Helper()
	for name, typ := range made {
		fi, err := os.Lstat(filepath.Join(root, "x", name))
		if err != nil {
			t.Errorf("%s: /x/%s is gone: %v", what, name, err)
			continue
		}
		if fi.Mode().Type() != typ {
			t.Errorf("%s: /x/%s became %v, was %v", what, name, fi.Mode().Type(), typ)
		}
	}
}

// TestFileWriterLeavesWhatIsNoRegularFile: a spec.report.path naming a
// device (/dev/null, /dev/console: "no report file", "the report on the
// console"), a FIFO, a directory or a symbolic link to one is left as it
// is and the writer fails naming it. The report replaced it: /dev/null
// became a regular file of mode 0600 that only root can open.
func TestFileWriterLeavesWhatIsNoRegularFile(t *testing.T) {
	root, made := nonRegular(t)
	for name := range made {
		w := &FileWriter{Root: root, Path: "/x/" + name}
		err := w.Write(t.Context(), fixtureFailed())
		if err == nil || !strings.Contains(err.Error(), "/x/"+name) || !strings.Contains(err.Error(), "not replaced") {
			t.Errorf("%s: %v, want an error naming the path", name, err)
		}
		if _, err := os.Lstat(filepath.Join(root, "x", name+".previous")); err == nil {
			t.Errorf("%s: a previous copy was written", name)
		}
		w = &FileWriter{Root: root, Path: "/x/" + name}
		if err := w.WriteProgress(fixtureFailed(), true); err == nil {
			t.Errorf("%s: the provisional report was written", name)
		}
		if err := w.Write(t.Context(), fixtureFailed()); err == nil {
			t.Errorf("%s: the final report after a refused provisional one was written", name)
		}
	}
	checkLeft(t, root, made, "report")
	if entries, _ := os.ReadDir(filepath.Join(root, "x")); len(entries) != len(made)+1 {
		t.Errorf("files left behind: %v", entries)
	}
}

// TestSentinelWriterLeavesWhatIsNoRegularFile: a spec.report.sentinel
// naming a device (/dev/null: "no sentinel"), a FIFO, a directory or a
// symbolic link to one is neither removed, at the run's start or on a
// failure, nor replaced on a success; the writer fails naming it. The
// writer removed it (/dev/null, an empty directory, the /bin link) as a
// stale sentinel at every run's start.
func TestSentinelWriterLeavesWhatIsNoRegularFile(t *testing.T) {
	root, made := nonRegular(t)
	for name := range made {
		w := &SentinelWriter{Root: root, Path: "/x/" + name}
		if err := w.WriteProgress(fixtureFailed(), true); err == nil || !strings.Contains(err.Error(), "/x/"+name) {
			t.Errorf("%s, progress: %v, want an error naming the path", name, err)
		}
		for _, r := range []*BootstrapReport{fixtureFailed(), fixtureSucceeded()} {
			if err := w.Write(t.Context(), r); err == nil || !strings.Contains(err.Error(), "/x/"+name) {
				t.Errorf("%s, %s: %v, want an error naming the path", name, r.Result, err)
			}
		}
	}
	checkLeft(t, root, made, "sentinel")
}
