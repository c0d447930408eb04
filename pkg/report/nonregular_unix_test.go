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

// linkToFile makes, under a new root, /x/stdout: a symbolic link to the
// empty regular file /x/out.log, as /dev/stdout is (through
// /proc/self/fd/1) for a run whose standard output goes to a file that
// holds nothing yet. It returns the root.
func linkToFile(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "x")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "out.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("out.log", filepath.Join(dir, "stdout")); err != nil {
		t.Fatal(err)
	}
	return root
}

// checkLinkLeft fails t unless /x/stdout under root is still the link to
// /x/out.log, which is still empty, and nothing else was put in /x.
func checkLinkLeft(t *testing.T, root, what string) {
	t.Helper()
	dir := filepath.Join(root, "x")
	if fi, err := os.Lstat(filepath.Join(dir, "stdout")); err != nil || fi.Mode().Type() != fs.ModeSymlink {
		t.Errorf("%s: /x/stdout is no longer the link: %v, %v", what, fi, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.log")); err != nil || len(b) != 0 {
		t.Errorf("%s: /x/out.log %q, %v; want it empty", what, b, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%s: files left behind: %v", what, entries)
	}
}

// TestFileWriterLeavesALinkToAFile: a spec.report.path that is a
// symbolic link to a regular file (/dev/stdout, when the run's standard
// output goes to a file) is left as it is and the writer fails naming it.
// The atomic write's rename replaced the link, not its file: as root,
// /dev/stdout became a regular file for the whole machine (and
// /dev/stdout.previous was made), as `render -o /dev/stdout` did.
func TestFileWriterLeavesALinkToAFile(t *testing.T) {
	root := linkToFile(t)
	w := &FileWriter{Root: root, Path: "/x/stdout"}
	if err := w.WriteProgress(fixtureFailed(), true); err == nil || !strings.Contains(err.Error(), "/x/stdout") || !strings.Contains(err.Error(), "not replaced") {
		t.Errorf("provisional report: %v, want an error naming the path", err)
	}
	if err := w.Write(t.Context(), fixtureSucceeded()); err == nil || !strings.Contains(err.Error(), "/x/stdout") {
		t.Errorf("final report: %v, want an error naming the path", err)
	}
	checkLinkLeft(t, root, "report")
}

// TestSentinelWriterLeavesALinkToAFile: a spec.report.sentinel that is a
// symbolic link to an empty regular file (/dev/stdout, when the run's
// standard output goes to a file) is neither removed at the run's start
// nor replaced on a success; the writer fails naming it. The writer
// removed the link (/dev/stdout for the whole machine) as a stale
// sentinel.
func TestSentinelWriterLeavesALinkToAFile(t *testing.T) {
	root := linkToFile(t)
	w := &SentinelWriter{Root: root, Path: "/x/stdout"}
	if err := w.WriteProgress(fixtureFailed(), true); err == nil || !strings.Contains(err.Error(), "/x/stdout") {
		t.Errorf("progress: %v, want an error naming the path", err)
	}
	for _, r := range []*BootstrapReport{fixtureFailed(), fixtureSucceeded()} {
		if err := w.Write(t.Context(), r); err == nil || !strings.Contains(err.Error(), "/x/stdout") {
			t.Errorf("%s: %v, want an error naming the path", r.Result, err)
		}
	}
	checkLinkLeft(t, root, "sentinel")
}
