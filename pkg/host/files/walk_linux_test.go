package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// aliceImage makes an image root with /home/alice owned by uid 1000 (a
// person on the build host) holding the directory conf, and a directory
// outside the root; it returns the root, the host path of conf and the
// outside directory. Root only (chown).
func aliceImage(t *testing.T) (root, conf, outside string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown)")
	}
	root = t.TempDir()
	alice := filepath.Join(root, "home", "alice")
	conf = filepath.Join(alice, "conf")
	must(t, os.MkdirAll(conf, 0o755))
	must(t, os.Chown(alice, 1000, 1000))
	outside = t.TempDir()
	return root, conf, outside
}

// swapForLink is what alice does after Resolve: her directory dir becomes
// a symbolic link to target (and the directory is kept aside).
func swapForLink(t *testing.T, dir, target string) {
	t.Helper()
	must(t, os.Rename(dir, dir+".aside"))
	must(t, os.Symlink(target, dir))
}

// refusedNaming checks err refuses the link at link, and that outside
// was left empty.
func refusedNaming(t *testing.T, err error, link, outside string) {
	t.Helper()
	if names := dirNames(t, outside); len(names) != 0 {
		t.Errorf("written outside the root, in %s: %v", outside, names)
	}
	if !errors.Is(err, ErrLinkNotFollowed) || !strings.Contains(err.Error(), link) {
		t.Errorf("got %v, want an error naming %s wrapping ErrLinkNotFollowed", err, link)
	}
}

// TestWriteAtomicDirectorySwappedAfterResolve: a directory on the way
// to a resolved path, in a directory someone else owns, swapped for a
// symlink after Resolve, is not followed: the content does not land
// under the file's name in the directory the link names (outside the
// root).
func TestWriteAtomicDirectorySwappedAfterResolve(t *testing.T) {
	root, conf, outside := aliceImage(t)
	hp, err := Resolve(root, "/home/alice/conf/app.toml")
	must(t, err)
	swapForLink(t, conf, outside)
	err = WriteAtomic(hp, []byte("spec content\n"), 0o644, 0, 0)
	refusedNaming(t, err, conf, outside)
	// Nor a missing directory below the link, which MkdirAll made.
	hp2, err := Resolve(root, "/home/alice/conf.aside/sub/app.toml")
	must(t, err)
	swapForLink(t, filepath.Join(conf+".aside"), outside)
	err = WriteAtomic(hp2, []byte("spec content\n"), 0o644, 0, 0)
	refusedNaming(t, err, conf+".aside", outside)
}

// TestApplyBlobDirectorySwappedAfterResolve: the same for a Blob staged
// unnamed in the destination's directory and linked into place
// (install), and for its copy.
func TestApplyBlobDirectorySwappedAfterResolve(t *testing.T) {
	root, conf, outside := aliceImage(t)
	hp, err := Resolve(root, "/home/alice/conf/kubelet")
	must(t, err)
	content := big(InlineMax+1, 7)
	b := fetchFor(t, content, hp)
	if b.dir == "" {
		t.Skip("no O_TMPFILE here: nothing staged in the destination's directory")
	}
	cur := mustState(t, hp)
	swapForLink(t, conf, outside)
	err = Apply(Plan(Desired{Path: "/home/alice/conf/kubelet", Blob: b, Mode: 0o755}, hp, cur))
	refusedNaming(t, err, conf, outside)
}

// TestApplyAppendDirectorySwappedAfterResolve: the same for an append,
// whose write would otherwise replace the file of that name in the
// directory the link names.
func TestApplyAppendDirectorySwappedAfterResolve(t *testing.T) {
	root, conf, outside := aliceImage(t)
	must(t, os.WriteFile(filepath.Join(conf, "hosts"), []byte("a\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "hosts"), []byte("outside\n"), 0o600))
	hp, err := Resolve(root, "/home/alice/conf/hosts")
	must(t, err)
	c := Plan(Desired{Path: "/home/alice/conf/hosts", Content: []byte("b\n"), Append: true, Mode: 0o644}, hp, mustState(t, hp))
	swapForLink(t, conf, outside)
	err = Apply(c)
	if got, _ := os.ReadFile(filepath.Join(outside, "hosts")); string(got) != "outside\n" {
		t.Errorf("the file outside the root now holds %q", got)
	}
	if !errors.Is(err, ErrLinkNotFollowed) || !strings.Contains(err.Error(), conf) {
		t.Errorf("got %v, want an error naming %s wrapping ErrLinkNotFollowed", err, conf)
	}
	// Nor is a removal done there.
	c = Plan(Desired{Path: "/home/alice/conf/hosts", Remove: true}, hp, State{Exists: true})
	err = Apply(c)
	if _, serr := os.Lstat(filepath.Join(outside, "hosts")); serr != nil {
		t.Errorf("the file outside the root: %v", serr)
	}
	if !errors.Is(err, ErrLinkNotFollowed) {
		t.Errorf("removal: got %v, want ErrLinkNotFollowed", err)
	}
}

// TestReadLocalDirectorySwappedAfterResolve: a file:// source whose
// directory is swapped for a symlink after Resolve is not read through
// it (the size and SHA-256 of any file root can read would be told).
func TestReadLocalDirectorySwappedAfterResolve(t *testing.T) {
	root, conf, outside := aliceImage(t)
	must(t, os.WriteFile(filepath.Join(conf, "payload"), []byte("alice's\n"), 0o644))
	secret := []byte("outside the root\n")
	must(t, os.WriteFile(filepath.Join(outside, "payload"), secret, 0o600))
	readLocalResolved = func(string) { swapForLink(t, conf, outside) }
	defer func() { readLocalResolved = nil }()
	b, err := Fetch(context.Background(), nil, root, "file:///home/alice/conf/payload", sum(secret))
	if err == nil {
		b.Close()
		t.Fatalf("read %s through the link swapped in", filepath.Join(outside, "payload"))
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), ErrLinkNotFollowed.Error()) || !strings.Contains(err.Error(), conf) {
		t.Errorf("got %v, want ErrUnavailable naming %s, the link not followed", err, conf)
	}
}

// TestOpenDirFollowsOnlyRootsLinks: a symbolic link in a directory only
// root can change (a --root DIR that is one) is followed; one in a
// directory others can write to is not.
func TestOpenDirFollowsOnlyRootsLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := t.TempDir()
	must(t, os.Chmod(base, 0o755))
	img := filepath.Join(base, "img")
	must(t, os.MkdirAll(filepath.Join(img, "etc"), 0o755))
	must(t, os.Symlink("img", filepath.Join(base, "root")))
	hp, err := Resolve(filepath.Join(base, "root"), "/etc/new/x.conf")
	must(t, err)
	must(t, WriteAtomic(hp, []byte("x\n"), 0o640, 0, 0))
	if got, _ := os.ReadFile(filepath.Join(img, "etc", "new", "x.conf")); string(got) != "x\n" {
		t.Errorf("through root's link: %q", got)
	}
	shared := filepath.Join(base, "shared")
	must(t, os.Mkdir(shared, 0o755))
	must(t, os.Chmod(shared, 0o1777))
	must(t, os.Symlink(img, filepath.Join(shared, "root")))
	err = WriteAtomic(filepath.Join(shared, "root", "etc", "y.conf"), []byte("y\n"), 0o644, 0, 0)
	if !errors.Is(err, ErrLinkNotFollowed) || !strings.Contains(err.Error(), filepath.Join(shared, "root")) {
		t.Errorf("through a link in a sticky world-writable directory: %v", err)
	}
}

// TestWriteAtomicDirectoryIsAFIFO: a FIFO where a directory should be is
// refused at once, not opened (which waits for a writer).
func TestWriteAtomicDirectoryIsAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "d")
	must(t, syscall.Mkfifo(fifo, 0o644))
	done := make(chan error, 1)
	go func() { done <- WriteAtomic(filepath.Join(fifo, "f"), []byte("x"), 0o644, os.Getuid(), os.Getgid()) }()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), fifo) {
			t.Errorf("got %v, want ENOTDIR naming %s", err, fifo)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("WriteAtomic below a FIFO still waiting after 20s")
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "d" {
		t.Errorf("left in %s: %v", dir, names)
	}
}

// TestDirDirectorySwappedAfterResolve: Dir's writes and reads do not
// follow a directory swapped for a symlink after Resolve either.
func TestDirDirectorySwappedAfterResolve(t *testing.T) {
	root, conf, outside := aliceImage(t)
	must(t, os.WriteFile(filepath.Join(outside, "admin.conf"), []byte("outside\n"), 0o600))
	hp, err := Resolve(root, "/home/alice/conf/admin.conf")
	must(t, err)
	swapForLink(t, conf, outside)
	err = writeDirFile(hp, []byte("kubeconfig\n"), 0o600)
	if got, _ := os.ReadFile(filepath.Join(outside, "admin.conf")); string(got) != "outside\n" {
		t.Errorf("the file outside the root now holds %q", got)
	}
	if !errors.Is(err, ErrLinkNotFollowed) || !strings.Contains(err.Error(), conf) {
		t.Errorf("write: got %v, want an error naming %s wrapping ErrLinkNotFollowed", err, conf)
	}
	if got, err := readDirFile(hp, MaxDirFileSize); !errors.Is(err, ErrLinkNotFollowed) {
		t.Errorf("read: got %q, %v, want ErrLinkNotFollowed", got, err)
	}
	if err := mkdirAllHost(filepath.Join(hp+".d", "x"), 0o700); !errors.Is(err, ErrLinkNotFollowed) {
		t.Errorf("mkdir: got %v, want ErrLinkNotFollowed", err)
	}
	if names := dirNames(t, outside); len(names) != 1 {
		t.Errorf("made in %s: %v", outside, names)
	}
}

// TestReadStateDirectorySwappedAfterResolve: the file a change is
// planned against is the one in the resolved directory, not one a
// directory swapped for a symlink after Resolve leads to: its content
// would be shown in a diff, and a change of only its mode or owner made
// to it in place (a file put at the name since is refused there, the file
// examined being that one).
func TestReadStateDirectorySwappedAfterResolve(t *testing.T) {
	root, conf, outside := aliceImage(t)
	secret := []byte("root:secret\n")
	must(t, os.WriteFile(filepath.Join(outside, "shadow"), secret, 0o600))
	hp, err := Resolve(root, "/home/alice/conf/shadow")
	must(t, err)
	swapForLink(t, conf, outside)
	st, err := ReadState(hp)
	if st.Exists || !errors.Is(err, ErrLinkNotFollowed) || !strings.Contains(err.Error(), conf) {
		t.Errorf("got %v (content %q), %v, want an error naming %s wrapping ErrLinkNotFollowed", st.Exists, st.Content, err, conf)
	}
	// Planned against the file outside (as ReadState used to see it), a
	// change of its mode only: made nowhere.
	fi, err := os.Lstat(filepath.Join(outside, "shadow"))
	must(t, err)
	cur := State{Exists: true, Content: secret, Mode: 0o600, links: 1, examined: fi}
	err = Apply(Plan(Desired{Path: "/home/alice/conf/shadow", Content: secret, Mode: 0o644}, hp, cur))
	if fi, _ := os.Lstat(filepath.Join(outside, "shadow")); fi.Mode().Perm() != 0o600 {
		t.Errorf("the file outside the root now has mode %04o (%v)", fi.Mode().Perm(), err)
	}
}

// TestOpenDirFollowsTheRunningUsersLinks: a run that is not root
// (prepare --root DIR as a user) follows a symbolic link in a directory
// of its own user, such as a --root in its home that is a link, but not
// one in another user's directory.
func TestOpenDirFollowsTheRunningUsersLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown)")
	}
	base := t.TempDir()
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, 0o755))
	mine, theirs := filepath.Join(base, "mine"), filepath.Join(base, "theirs")
	for dir, uid := range map[string]int{mine: unprivileged, theirs: 1000} {
		must(t, os.MkdirAll(filepath.Join(dir, "img", "etc"), 0o755))
		must(t, os.Symlink("img", filepath.Join(dir, "root")))
		for _, p := range []string{dir, filepath.Join(dir, "img"), filepath.Join(dir, "img", "etc")} {
			must(t, os.Chown(p, uid, uid))
		}
	}
	var errMine, errTheirs error
	asUser(t, unprivileged, unprivileged, func() {
		errMine = WriteAtomic(filepath.Join(mine, "root", "etc", "x"), []byte("x\n"), 0o644, -1, -1)
		errTheirs = WriteAtomic(filepath.Join(theirs, "root", "etc", "x"), []byte("x\n"), 0o644, -1, -1)
	})
	if got, _ := os.ReadFile(filepath.Join(mine, "img", "etc", "x")); errMine != nil || string(got) != "x\n" {
		t.Errorf("through a link in the running user's directory: %q, %v", got, errMine)
	}
	if !errors.Is(errTheirs, ErrLinkNotFollowed) {
		t.Errorf("through a link in another user's directory: %v, want ErrLinkNotFollowed", errTheirs)
	}
}

// TestOpenDirFollowsOwnLinkInStickyDirectory: a --root that is a link in
// /tmp (sticky, writable by all) is followed when the link is the running
// user's (no one else may remove or rename it there), not when another
// user's, nor in a directory writable by all that is not sticky.
func TestOpenDirFollowsOwnLinkInStickyDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (chown)")
	}
	base := t.TempDir()
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, 0o755))
	img := filepath.Join(base, "img")
	must(t, os.MkdirAll(filepath.Join(img, "etc"), 0o755))
	for _, p := range []string{img, filepath.Join(img, "etc")} {
		must(t, os.Chown(p, unprivileged, unprivileged))
	}
	sticky, open := filepath.Join(base, "tmp"), filepath.Join(base, "open")
	must(t, os.Mkdir(sticky, 0o755))
	must(t, os.Mkdir(open, 0o755))
	must(t, os.Chmod(sticky, os.ModeSticky|0o777))
	must(t, os.Chmod(open, 0o777))
	links := map[string]int{
		filepath.Join(sticky, "mine"):   unprivileged,
		filepath.Join(sticky, "theirs"): 1000,
		filepath.Join(open, "mine"):     unprivileged,
	}
	for l, uid := range links {
		must(t, os.Symlink(img, l))
		must(t, os.Lchown(l, uid, uid))
	}
	errs := map[string]error{}
	asUser(t, unprivileged, unprivileged, func() {
		for l := range links {
			errs[l] = WriteAtomic(filepath.Join(l, "etc", "x"), []byte("x\n"), 0o644, -1, -1)
		}
	})
	if err := errs[filepath.Join(sticky, "mine")]; err != nil {
		t.Errorf("through the running user's link in a sticky directory: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(img, "etc", "x")); string(got) != "x\n" {
		t.Errorf("through the running user's link in a sticky directory: %q written", got)
	}
	for _, l := range []string{filepath.Join(sticky, "theirs"), filepath.Join(open, "mine")} {
		if !errors.Is(errs[l], ErrLinkNotFollowed) {
			t.Errorf("through %s: %v, want ErrLinkNotFollowed", l, errs[l])
		}
	}
}

// TestWriteAtomicRootsLinkBelowADirectorySwapped: alice cannot make a
// link of root's, but she can rename the directories of root's in her
// own directory: after Resolve she puts root's var (holding root's link
// run -> /run, as in an image) where conf was. That link, in a directory
// only root may change, is not followed either: the directory holding it
// is below one alice can change, so it may not be the one resolved, and
// the content does not land where root's link names (outside the root).
func TestWriteAtomicRootsLinkBelowADirectorySwapped(t *testing.T) {
	root, conf, outside := aliceImage(t)
	must(t, os.Mkdir(filepath.Join(conf, "run"), 0o755))
	rootsVar := filepath.Join(filepath.Dir(conf), "var")
	must(t, os.Mkdir(rootsVar, 0o755))
	must(t, os.Symlink(outside, filepath.Join(rootsVar, "run")))
	hp, err := Resolve(root, "/home/alice/conf/run/app.toml")
	must(t, err)
	must(t, os.Chmod(filepath.Dir(root), 0o755))
	must(t, os.Chmod(root, 0o755))
	var aerr error
	asUser(t, 1000, 1000, func() {
		if aerr = os.Rename(conf, conf+".aside"); aerr == nil {
			aerr = os.Rename(rootsVar, conf)
		}
	})
	must(t, aerr)
	err = WriteAtomic(hp, []byte("spec content\n"), 0o644, 0, 0)
	refusedNaming(t, err, filepath.Join(conf, "run"), outside)
	_, err = lstatHost(hp)
	if !errors.Is(err, ErrLinkNotFollowed) {
		t.Errorf("lstat through root's link below alice's directory: %v, want ErrLinkNotFollowed", err)
	}
}

// TestOpenDirRootsLinkHardLinkedIntoStickyDirectory: where
// fs.protected_hardlinks is off, anyone may give root's link elsewhere a
// second name in /tmp (made here by the test, as root): that name is
// root's link in a sticky directory, but not one root put there, and is
// not followed.
func TestOpenDirRootsLinkHardLinkedIntoStickyDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	base := t.TempDir()
	must(t, os.Chmod(base, 0o755))
	outside := t.TempDir()
	rootsDir := filepath.Join(base, "var")
	must(t, os.Mkdir(rootsDir, 0o755))
	must(t, os.Symlink(outside, filepath.Join(rootsDir, "run")))
	sticky := filepath.Join(base, "tmp")
	must(t, os.Mkdir(sticky, 0o755))
	must(t, os.Chmod(sticky, os.ModeSticky|0o777))
	link := filepath.Join(sticky, "alices")
	must(t, os.Link(filepath.Join(rootsDir, "run"), link))
	err := WriteAtomic(filepath.Join(link, "x"), []byte("x\n"), 0o644, 0, 0)
	refusedNaming(t, err, link, outside)
}
