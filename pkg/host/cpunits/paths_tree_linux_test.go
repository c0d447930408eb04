package cpunits_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/files"
)

// etcdTree makes root's passwd, group and shadow and returns the data
// directory /var/lib/etcd under root.
func etcdTree(t *testing.T, root string) string {
	t.Helper()
	hostEtc(t, root)
	data := filepath.Join(root, "var/lib/etcd")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	return data
}

// sysctl writes a stand-in for fs.protected_hardlinks with value v and
// points chownTree at it for the test.
func sysctl(t *testing.T, v string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "protected_hardlinks")
	if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cpunits.SetProtectedHardlinks(p))
}

func ownerOf(t *testing.T, p string) int {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := files.Owner(fi)
	return u
}

// TestApplyPathsRecursiveUnprotectedLinks: with fs.protected_hardlinks
// at 0, a file below the data directory that is not the owner's, in a
// directory the owner may write, is refused with nothing given to the
// owner (it may be a link of /etc/shadow whose other name the owner
// removed once machineadm opened it: one name proves nothing); in a
// directory the owner may not write (a data directory still root's,
// moved from root's etcd) the same file gets the owner, and so does it
// everywhere with the sysctl at 1. The owner's own files are given the
// group either way.
func TestApplyPathsRecursiveUnprotectedLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file another owner")
	}
	rules := []cpunits.PathRule{{Path: "/var/lib/etcd", Dir: true, Mode: 0o700, User: "4242", Group: "4242", Recursive: true}}
	for _, c := range []struct {
		name, sysctl string
		dirOwner     int
		dirMode      os.FileMode
		refused      bool
	}{
		{"owner's directory, unprotected", "0", 4242, 0o700, true},
		{"world-writable directory, unprotected", "0", 0, 0o777, true},
		{"root's directory, unprotected", "0", 0, 0o700, false},
		{"owner's directory, protected", "1", 4242, 0o700, false},
		{"owner's directory, no sysctl", "", 4242, 0o700, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			data := etcdTree(t, root)
			if c.sysctl == "" {
				t.Cleanup(cpunits.SetProtectedHardlinks(filepath.Join(root, "missing")))
			} else {
				sysctl(t, c.sysctl)
			}
			member := filepath.Join(data, "member")
			if err := os.Mkdir(member, c.dirMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(member, c.dirMode); err != nil { // umask
				t.Fatal(err)
			}
			if err := os.Lchown(member, c.dirOwner, c.dirOwner); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(member, "db")
			if err := os.WriteFile(db, []byte("db\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			own := filepath.Join(member, "own")
			if err := os.WriteFile(own, []byte("etcd's\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(own, 4242, 0); err != nil {
				t.Fatal(err)
			}
			for _, dry := range []bool{true, false} {
				_, err := cpunits.ApplyPaths(root, rules, dry)
				if c.refused {
					if err == nil || !strings.Contains(err.Error(), "protected_hardlinks") || !strings.Contains(err.Error(), `member/db"`) {
						t.Fatalf("dry run %v: err %v, want db refused naming fs.protected_hardlinks", dry, err)
					}
					if u := ownerOf(t, db); u != 0 {
						t.Fatalf("dry run %v: the refused file got owner %d", dry, u)
					}
					continue
				}
				if err != nil {
					t.Fatalf("dry run %v: %v", dry, err)
				}
			}
			if c.refused {
				return
			}
			for _, p := range []string{member, db, own} {
				if u := ownerOf(t, p); u != 4242 {
					t.Errorf("%s: owner %d, want 4242", p, u)
				}
			}
		})
	}
}

// TestApplyPathsRecursiveDepthAndMounts: a tree nested deeper than the
// walk goes, or with another file system mounted below it, is refused
// with an error naming where, not walked without end or into the mount.
func TestApplyPathsRecursiveDepthAndMounts(t *testing.T) {
	root, data, rules := protectedEtcdRule(t)
	deep := data
	for range cpunits.MaxTreeDepth + 5 {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.ApplyPaths(root, rules, false); err == nil || !strings.Contains(err.Error(), "does not walk deeper") {
		t.Fatalf("a tree %d deep: err %v, want it refused", cpunits.MaxTreeDepth+5, err)
	}
	if err := os.RemoveAll(filepath.Join(data, "d")); err != nil {
		t.Fatal(err)
	}

	mnt := filepath.Join(data, "member")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := mountTmpfs(mnt); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { unmount(mnt) })
	if err := os.WriteFile(filepath.Join(mnt, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.ApplyPaths(root, rules, false); err == nil || !strings.Contains(err.Error(), "another file system") {
		t.Fatalf("a tmpfs mounted below: err %v, want it refused", err)
	}
	if u := ownerOf(t, filepath.Join(mnt, "x")); u != 0 {
		t.Errorf("a file on the mounted file system got owner %d", u)
	}
}

// TestApplyPathsRecursiveBindMount: a directory of the same file system
// bind-mounted below the data directory (an operator's /etc there) has
// the tree's st_dev, but is mounted there all the same: refused, and
// nothing in it given the owner.
func TestApplyPathsRecursiveBindMount(t *testing.T) {
	root, data, rules := protectedEtcdRule(t)
	mnt := filepath.Join(data, "member")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := bindMount(filepath.Join(root, "etc"), mnt); err != nil {
		t.Skipf("bind-mounting: %v", err)
	}
	t.Cleanup(func() { unmount(mnt) })
	for _, dry := range []bool{true, false} {
		if _, err := cpunits.ApplyPaths(root, rules, dry); err == nil || !strings.Contains(err.Error(), "member") {
			t.Errorf("dry run %v: err %v, want the bind mount refused", dry, err)
		}
	}
	if u := ownerOf(t, filepath.Join(root, "etc/shadow")); u != 0 {
		t.Errorf("etc/shadow, bind-mounted below the data directory, got owner %d", u)
	}

	// A file bind-mounted there: root's etc/shadow as member/x.
	unmount(mnt)
	x := filepath.Join(mnt, "x")
	if err := os.WriteFile(x, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := bindMount(filepath.Join(root, "etc/shadow"), x); err != nil {
		t.Fatalf("bind-mounting a file: %v", err)
	}
	t.Cleanup(func() { unmount(x) })
	if _, err := cpunits.ApplyPaths(root, rules, false); err == nil || !strings.Contains(err.Error(), "member/x") {
		t.Errorf("a file bind-mounted: err %v, want it refused", err)
	}
	if u := ownerOf(t, filepath.Join(root, "etc/shadow")); u != 0 {
		t.Errorf("etc/shadow, bind-mounted as a file below the data directory, got owner %d", u)
	}
}

// TestApplyPathsRecursiveOwnersDeepTree: the owner (etcd) may nest its
// own directories deeper than the walk goes; were that refused, etcd
// could make every run fail. Its own directory that deep is left as it
// is (nothing below it is given the owner); the rest converges.
func TestApplyPathsRecursiveOwnersDeepTree(t *testing.T) {
	root, data, rules := protectedEtcdRule(t)
	deep := data
	for range cpunits.MaxTreeDepth + 5 {
		deep = filepath.Join(deep, "d")
		if err := os.Mkdir(deep, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(deep, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(data, "db")
	if err := os.WriteFile(db, []byte("db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		if _, err := cpunits.ApplyPaths(root, rules, dry); err != nil {
			t.Fatalf("dry run %v: %v", dry, err)
		}
	}
	if u := ownerOf(t, db); u != 4242 {
		t.Errorf("db: owner %d, want 4242", u)
	}
	if changes, err := cpunits.ApplyPaths(root, rules, false); err != nil || len(changes) != 0 {
		t.Errorf("rerun: changes %q, err %v; want none", changes, err)
	}
}

// protectedEtcdRule is the setup of a test of the data directory's walk
// as root with fs.protected_hardlinks at 1: a root with passwd, group,
// shadow and /var/lib/etcd (etcdTree), and the Recursive rule giving
// that directory to 4242:4242. It skips the test when not root.
func protectedEtcdRule(t *testing.T) (root, data string, rules []cpunits.PathRule) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file another owner")
	}
	sysctl(t, "1")
	root = t.TempDir()
	return root, etcdTree(t, root), []cpunits.PathRule{{Path: "/var/lib/etcd", Dir: true, Mode: 0o700, User: "4242", Group: "4242", Recursive: true}}
}
