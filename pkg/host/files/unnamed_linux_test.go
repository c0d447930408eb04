package files

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fetchFor stages content (from a file:// source) for the host file dst.
func fetchFor(t *testing.T, content []byte, dst string) *Blob {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.WriteFile(src, content, 0o644))
	b, err := FetchFor(context.Background(), nil, "/", "file://"+src, sum(content), dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// dirNames lists dir's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestFetchForLinksTheContentIntoPlace: content fetched for a host file
// is staged in that file's directory with no name (nothing appears there,
// nor in TMPDIR), and Apply makes that very file the host file (the same
// inode: linked, not copied) with the mode and owner asked, replacing the
// old one atomically and leaving no temporary name.
func TestFetchForLinksTheContentIntoPlace(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	dst := filepath.Join(dir, "kubelet")
	must(t, os.WriteFile(dst, []byte("old kubelet"), 0o755))
	content := big(InlineMax*3+17, 4)
	b := fetchFor(t, content, dst)
	if b.dir != dir {
		t.Fatalf("staged in %q, want unnamed in %s", b.dir, dir)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "kubelet" {
		t.Errorf("the staged content is visible in the destination's directory: %v", names)
	}
	if names := dirNames(t, tmp); len(names) != 0 {
		t.Errorf("staged in TMPDIR too: %v", names)
	}
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 1234, 1235
	}
	ch := Plan(Desired{Path: "/kubelet", Blob: b, Mode: 0o750, UID: uid, GID: gid}, dst, mustState(t, dst))
	if !ch.ContentChanged() {
		t.Fatal("different content planned as unchanged")
	}
	must(t, Apply(ch))
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("%s: %d bytes, %v", dst, len(got), err)
	}
	fi, err := os.Stat(dst)
	must(t, err)
	bfi, err := b.f.Stat()
	must(t, err)
	if !os.SameFile(fi, bfi) {
		t.Error("the content was copied into place, not linked")
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o750 || int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("mode %v owner %d:%d, want 0750 %d:%d", fi.Mode().Perm(), st.Uid, st.Gid, uid, gid)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("temporary names left: %v", names)
	}
	// The Blob is still read whole, from the installed file, and an
	// unchanged file is planned as unchanged.
	if got := blobString(t, b); got != string(content) {
		t.Errorf("the Blob after install reads %d bytes", len(got))
	}
}

// TestInstalledBlobRefusesAChangedFile: once linked into place, the
// Blob's file is the host file; written to in place since, it is refused
// rather than copied elsewhere as the content that was checked.
func TestInstalledBlobRefusesAChangedFile(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "tool")
	content := big(InlineMax+5, 1)
	b := fetchFor(t, content, dst)
	must(t, Apply(Plan(Desired{Path: "/tool", Blob: b, Mode: 0o755, UID: os.Getuid(), GID: os.Getgid()}, dst, mustState(t, dst))))
	// Written in place (the same inode), as an editor or a package
	// script could.
	f, err := os.OpenFile(dst, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte{0xff}, 10)
	must(t, err)
	must(t, f.Close())
	if _, err := b.Reader(); !errors.Is(err, ErrDigestMismatch) || !strings.Contains(err.Error(), dst) {
		t.Errorf("Reader of a changed installed file: %v, want ErrDigestMismatch naming %s", err, dst)
	}
	other := filepath.Join(dir, "copy")
	err = Apply(Plan(Desired{Path: "/copy", Blob: b, Mode: 0o644, UID: os.Getuid(), GID: os.Getgid()}, other, mustState(t, other)))
	if !errors.Is(err, ErrDigestMismatch) {
		t.Errorf("Apply from a changed installed Blob: %v, want ErrDigestMismatch", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s written from changed content: %v", other, err)
	}
}

// TestFetchForElsewhereCopies: a Blob written to a path in another
// directory, or a second time, is copied there (its staged file is linked
// once, into its own directory), and the copies hold the content.
func TestFetchForElsewhereCopies(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	dst := filepath.Join(dir, "bin")
	content := big(InlineMax+9, 2)
	b := fetchFor(t, content, dst)
	for _, p := range []string{filepath.Join(elsewhere, "bin"), dst, filepath.Join(dir, "again")} {
		must(t, Apply(Plan(Desired{Path: p, Blob: b, Mode: 0o644, UID: os.Getuid(), GID: os.Getgid()}, p, mustState(t, p))))
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("%s: %d bytes, %v", p, len(got), err)
		}
	}
	bfi, err := b.f.Stat()
	must(t, err)
	for p, linked := range map[string]bool{filepath.Join(elsewhere, "bin"): false, dst: true, filepath.Join(dir, "again"): false} {
		fi, err := os.Stat(p)
		must(t, err)
		if os.SameFile(fi, bfi) != linked {
			t.Errorf("%s: linked %v, want %v", p, !linked, linked)
		}
	}
	if names := dirNames(t, dir); len(names) != 2 {
		t.Errorf("%s holds %v, want bin and again", dir, names)
	}
}

// TestFetchForFallsBackToTMPDIR: with the destination's directory
// missing, the content is staged in TMPDIR (a check creates no
// directory), and Apply creates the directory and copies it there.
func TestFetchForFallsBackToTMPDIR(t *testing.T) {
	parent := t.TempDir()
	dst := filepath.Join(parent, "new", "bin")
	content := []byte("binary")
	b := fetchFor(t, content, dst)
	if b.dir != "" {
		t.Fatalf("staged in %q, want TMPDIR", b.dir)
	}
	if _, err := os.Stat(filepath.Dir(dst)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the fetch created %s: %v", filepath.Dir(dst), err)
	}
	must(t, Apply(Plan(Desired{Path: dst, Blob: b, Mode: 0o644, UID: os.Getuid(), GID: os.Getgid()}, dst, mustState(t, dst))))
	if got, err := os.ReadFile(dst); err != nil || string(got) != "binary" {
		t.Errorf("%s: %q, %v", dst, got, err)
	}
}

// TestFetchForMismatchLeavesNothing: content with another digest, staged
// in the destination's directory, is gone with the error; the old file is
// untouched.
func TestFetchForMismatchLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "kubelet")
	must(t, os.WriteFile(dst, []byte("old"), 0o755))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("tampered")) }))
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server not on loopback: %s", srv.URL)
	}
	_, err := FetchFor(context.Background(), &http.Client{Timeout: 5 * time.Second}, "/", srv.URL+"/kubelet", sum([]byte("genuine")), dst)
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("error %v, want ErrDigestMismatch", err)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("left in the destination's directory: %v", names)
	}
	if got, _ := os.ReadFile(dst); string(got) != "old" {
		t.Errorf("old file now %q", got)
	}
}

// TestInstallFailureLeavesNoName: when the rename into place fails (the
// path is a directory that is not empty), the error says so, the
// temporary name is gone and the Blob can still be written elsewhere.
func TestInstallFailureLeavesNoName(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "busy")
	must(t, os.MkdirAll(filepath.Join(dst, "x"), 0o755))
	content := big(InlineMax+1, 3)
	b := fetchFor(t, content, dst)
	d, err := openDir(dir, 0, false)
	must(t, err)
	defer d.Close()
	done, err := b.install(d, dst, 0o755, -1, -1)
	if !done || err == nil || !strings.Contains(err.Error(), dst) {
		t.Fatalf("install over a directory: done %v, %v", done, err)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "busy" {
		t.Errorf("left in %s: %v", dir, names)
	}
	other := filepath.Join(dir, "ok")
	must(t, Apply(Plan(Desired{Path: other, Blob: b, Mode: 0o644, UID: os.Getuid(), GID: os.Getgid()}, other, mustState(t, other))))
	if got, _ := os.ReadFile(other); !bytes.Equal(got, content) {
		t.Errorf("%s: %d bytes", other, len(got))
	}
}

// TestFetchForStagingErrorNamesTheDirectory: when neither the
// destination's directory nor TMPDIR can hold the content, the error is
// ErrStaging and names TMPDIR, the last tried.
func TestFetchForStagingErrorNamesTheDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	t.Setenv("TMPDIR", missing)
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.WriteFile(src, []byte("p"), 0o644))
	_, err := FetchFor(context.Background(), nil, "/", "file://"+src, sum([]byte("p")), filepath.Join(t.TempDir(), "gone", "f"))
	if !errors.Is(err, ErrStaging) || !strings.Contains(err.Error(), missing) {
		t.Errorf("error %v, want ErrStaging naming %s", err, missing)
	}
}

// TestInstalledBinaryCanBeExecuted: a binary linked into place (the
// kubelet, containerd) is started later in the same run (containerd's
// restart, kubeadm's kubelet) while the plan, and so the Blob, is still
// held. The Blob must then not hold its file open for writing: Linux
// refuses to execute a file open for writing (ETXTBSY, "text file busy").
func TestInstalledBinaryCanBeExecuted(t *testing.T) {
	content, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("no /bin/true to install: %v", err)
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "true")
	b := fetchFor(t, content, dst)
	if b.dir != dir {
		t.Fatalf("staged in %q, want unnamed in %s", b.dir, dir)
	}
	must(t, Apply(Plan(Desired{Path: "/true", Blob: b, Mode: 0o755, UID: os.Getuid(), GID: os.Getgid()}, dst, mustState(t, dst))))
	if fi, err := os.Stat(dst); err != nil || !os.SameFile(fi, mustStat(t, b.f)) {
		t.Fatalf("%s not linked into place: %v", dst, err)
	}
	if err := exec.Command(dst).Run(); err != nil {
		t.Errorf("running the installed %s while its Blob is held: %v", dst, err)
	}
	// The Blob still reads the content.
	if got := blobString(t, b); got != string(content) {
		t.Errorf("the Blob reads %d bytes after install", len(got))
	}
}

func mustStat(t *testing.T, f *os.File) os.FileInfo {
	t.Helper()
	fi, err := f.Stat()
	must(t, err)
	return fi
}

// smallFS mounts a file system of size bytes (tmpfs, which has
// O_TMPFILE) on a new directory and returns it; it skips the test where
// mounting is not allowed.
func smallFS(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("mounting a small tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestFetchForFullDirectoryStagesInTMPDIR: where the destination's file
// system has no room for a second copy of the content (a nearly full
// root holding the kubelet already), staging falls back to TMPDIR as
// before, rather than failing the check: a run that finds the file
// unchanged needs no room there, and a dry run reports what it would do.
func TestFetchForFullDirectoryStagesInTMPDIR(t *testing.T) {
	dir := smallFS(t, 1<<20)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dst := filepath.Join(dir, "kubelet")
	content := big(700<<10, 7)
	must(t, os.WriteFile(dst, content, 0o755))
	b := fetchFor(t, content, dst)
	if b.dir != "" {
		t.Fatalf("staged unnamed in %s, which has no room", b.dir)
	}
	ch := Plan(Desired{Path: "/kubelet", Blob: b, Mode: 0o755, UID: os.Getuid(), GID: os.Getgid()}, dst, mustState(t, dst))
	if ch.Changed() {
		t.Errorf("the same content planned as a change: %s", ch.Summary())
	}
	must(t, Apply(ch))
	if got := blobString(t, b); got != string(content) {
		t.Errorf("the Blob reads %d bytes", len(got))
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("left in %s: %v", dir, names)
	}
}

// TestFetchForNoRoomAnywhereNamesBoth: with no room beside the
// destination and no TMPDIR, the error is ErrStaging naming both places
// tried.
func TestFetchForNoRoomAnywhereNamesBoth(t *testing.T) {
	dir := smallFS(t, 64<<10)
	missing := filepath.Join(t.TempDir(), "missing")
	t.Setenv("TMPDIR", missing)
	src := filepath.Join(t.TempDir(), "src")
	content := big(256<<10, 9)
	must(t, os.WriteFile(src, content, 0o644))
	_, err := FetchFor(context.Background(), nil, "/", "file://"+src, sum(content), filepath.Join(dir, "bin"))
	if !errors.Is(err, ErrStaging) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), missing) {
		t.Errorf("error %v, want ErrStaging naming %s and %s", err, dir, missing)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("left in %s: %v", dir, names)
	}
}

// TestFetchForNoRoomDoesNotFillTheDestination: content whose size is
// known before it is read (a file:// source, an HTTP answer with a
// Content-Length) and that the destination's file system has no room
// for is staged in TMPDIR from the start. Staging it beside the
// destination first would fill that file system to its last block, root's
// reserve included, before the spill to TMPDIR frees it: meanwhile every
// other writer there (etcd's WAL, the journal, the kubelet) gets ENOSPC,
// in a check that may find the file unchanged.
func TestFetchForNoRoomDoesNotFillTheDestination(t *testing.T) {
	dir := smallFS(t, 1<<20)
	t.Setenv("TMPDIR", t.TempDir())
	dst := filepath.Join(dir, "kubelet")
	content := big(700<<10, 7)
	must(t, os.WriteFile(dst, content, 0o755))
	ino, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(ino)
	if _, err := unix.InotifyAddWatch(ino, dir, unix.IN_MODIFY); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.WriteFile(src, content, 0o644))
	b, err := FetchFor(context.Background(), nil, "/", "file://"+src, sum(content), dst)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.dir != "" {
		t.Fatalf("staged unnamed in %s, which has no room", b.dir)
	}
	buf := make([]byte, 4096)
	if n, err := unix.Read(ino, buf); err != unix.EAGAIN {
		t.Errorf("content %d bytes was written in %s, which had no room for it (inotify read %d bytes, %v)", len(content), dir, n, err)
	}
	if got := blobString(t, b); got != string(content) {
		t.Errorf("the Blob reads %d bytes", len(got))
	}
}

// chunked serves content without a Content-Length (its size unknown
// until read, as a chunked answer), in pieces.
func chunked(t *testing.T, content []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for off := 0; off < len(content); off += 100 << 10 {
			w.Write(content[off:min(off+100<<10, len(content))])
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/kubelet"
}

// TestFetchForSpillsContentOfUnknownSize: content whose size is not known
// in advance fills the destination's file system part-way (a write that
// stores part of a piece, then ENOSPC) and moves to TMPDIR: the Blob
// holds exactly the content, whose SHA-256 was checked, and nothing is
// left in either directory.
func TestFetchForSpillsContentOfUnknownSize(t *testing.T) {
	dir := smallFS(t, 1<<20)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dst := filepath.Join(dir, "kubelet")
	must(t, os.WriteFile(dst, big(700<<10, 1), 0o755))
	content := big(700<<10+12345, 7)
	b, err := FetchFor(context.Background(), nil, "/", chunked(t, content), sum(content), dst)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.dir != "" {
		t.Fatalf("staged unnamed in %s, which has no room", b.dir)
	}
	if b.Size() != int64(len(content)) {
		t.Errorf("size %d, want %d", b.Size(), len(content))
	}
	if got := blobString(t, b); got != string(content) {
		t.Errorf("the Blob reads %d bytes, not the content", len(got))
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("left in %s: %v", dir, names)
	}
	if names := dirNames(t, tmp); len(names) != 0 {
		t.Errorf("left in %s: %v", tmp, names)
	}
}

// TestFetchForSpillFailingHalfWay: when TMPDIR has no room for what was
// staged beside the destination either, the check fails with ErrStaging
// naming both directories, leaving nothing in either.
func TestFetchForSpillFailingHalfWay(t *testing.T) {
	dir := smallFS(t, 256<<10)
	tmp := smallFS(t, 64<<10)
	t.Setenv("TMPDIR", tmp)
	content := big(512<<10, 3)
	_, err := FetchFor(context.Background(), nil, "/", chunked(t, content), sum(content), filepath.Join(dir, "kubelet"))
	if !errors.Is(err, ErrStaging) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), tmp) {
		t.Errorf("error %v, want ErrStaging naming %s and %s", err, dir, tmp)
	}
	for _, d := range []string{dir, tmp} {
		if names := dirNames(t, d); len(names) != 0 {
			t.Errorf("left in %s: %v", d, names)
		}
		var st unix.Statfs_t
		must(t, unix.Statfs(d, &st))
		if st.Bfree != st.Blocks {
			t.Errorf("%s: %d of %d blocks still used", d, st.Blocks-st.Bfree, st.Blocks)
		}
	}
}

// TestFetchForUnchangedFileLeavesItsDirectoryAlone: a rerun finds the
// host file already holding the content (a file of the content's size,
// known before it is read), which it will then not write: the content
// is staged in TMPDIR, not beside it, where it would take room, be
// written to disk and show as a write (inotify IN_MODIFY,
// IN_CLOSE_WRITE) to whoever watches the directory, at every rerun.
func TestFetchForUnchangedFileLeavesItsDirectoryAlone(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	dst := filepath.Join(dir, "kubelet")
	content := big(InlineMax*2+5, 4)
	must(t, os.WriteFile(dst, content, 0o755))
	ino, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(ino)
	if _, err := unix.InotifyAddWatch(ino, dir, unix.IN_MODIFY|unix.IN_CLOSE_WRITE|unix.IN_CREATE); err != nil {
		t.Fatal(err)
	}
	b := fetchFor(t, content, dst)
	if b.dir != "" {
		t.Errorf("staged unnamed in %s for a file that already holds the content", b.dir)
	}
	buf := make([]byte, 4096)
	if n, err := unix.Read(ino, buf); err != unix.EAGAIN {
		t.Errorf("a check of an unchanged file wrote in %s (inotify read %d bytes, %v)", dir, n, err)
	}
	ch := Plan(Desired{Path: "/kubelet", Blob: b, Mode: 0o755, UID: os.Getuid(), GID: os.Getgid()}, dst, mustState(t, dst))
	if ch.Changed() {
		t.Errorf("the same content planned as a change: %s", ch.Summary())
	}
}
