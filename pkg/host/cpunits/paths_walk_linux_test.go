package cpunits_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/files"
)

// TestApplyPathsRecursiveDirSwapped: a directory below a Recursive rule's
// directory that its owner (etcd, who writes the data directory) swaps
// for a symlink to /etc while machineadm gives the entries before it
// their owner is not followed: nothing outside the directory gets the
// owner. The swap is made once the walk gave the first directory its
// owner, after the data directory was listed (a directory of many entries
// holds the walk there long enough).
func TestApplyPathsRecursiveDirSwapped(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file another owner")
	}
	const entries = 20000
	inTime := false
	for attempt := 0; attempt < 5 && !inTime; attempt++ {
		root := t.TempDir()
		hostEtc(t, root)
		shadow := filepath.Join(root, "etc/shadow")
		data := filepath.Join(root, "var/lib/etcd")
		first := filepath.Join(data, "a")
		if err := os.MkdirAll(first, 0o700); err != nil {
			t.Fatal(err)
		}
		for i := range entries {
			if err := os.WriteFile(filepath.Join(first, fmt.Sprintf("f%05d", i)), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		swapped := filepath.Join(data, "b")
		if err := os.Mkdir(swapped, 0o700); err != nil {
			t.Fatal(err)
		}
		done, stop := make(chan bool), make(chan struct{})
		go func() {
			// Once the walk gave one of a's entries its owner (a's
			// own comes after them), b becomes a symlink to etc; in
			// time when another of a's entries has not got it yet.
			var watched []string
			for i := 0; i < entries; i += entries / 8 {
				watched = append(watched, filepath.Join(first, fmt.Sprintf("f%05d", i)))
			}
		wait:
			for {
				select {
				case <-stop:
					done <- false
					return
				default:
				}
				for _, p := range watched {
					if fi, err := os.Lstat(p); err == nil {
						if u, _ := files.Owner(fi); u == 4242 {
							break wait
						}
					}
				}
			}
			ok := os.Remove(swapped) == nil && os.Symlink(filepath.Join(root, "etc"), swapped) == nil
			pending := false
			for _, p := range watched {
				if fi, err := os.Lstat(p); err == nil {
					if u, _ := files.Owner(fi); u != 4242 {
						pending = true
					}
				}
			}
			done <- ok && pending
		}()
		rules := []cpunits.PathRule{{Path: "/var/lib/etcd", Dir: true, Mode: 0o700, User: "4242", Group: "4242", Recursive: true}}
		_, err := cpunits.ApplyPaths(root, rules, false)
		close(stop)
		inTime = <-done
		fi, serr := os.Stat(shadow)
		if serr != nil {
			t.Fatal(serr)
		}
		if u, _ := files.Owner(fi); u != 0 {
			t.Fatalf("ApplyPaths (%v) followed %s, swapped for a symlink to etc: %s owner %d, want 0", err, swapped, shadow, u)
		}
		if err != nil {
			t.Fatalf("ApplyPaths: %v", err)
		}
	}
	if !inTime {
		t.Skip("the symlink was never swapped in while the walk was in the first directory (a loaded machine)")
	}
}

// TestApplyPathsRecursiveSymlink: a symlink below a Recursive rule's
// directory gets the owner itself, its target (out of the directory)
// keeps its own, and every other entry below gets the owner.
func TestApplyPathsRecursiveSymlink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file another owner")
	}
	root := t.TempDir()
	for p, c := range map[string]string{"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n", "etc/group": "root:x:0:\n", "etc/shadow": "secret\n", "var/lib/etcd/member/snap/db": "db\n", "var/lib/etcd/member/wal/0.wal": "wal\n"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	shadow := filepath.Join(root, "etc/shadow")
	data := filepath.Join(root, "var/lib/etcd")
	if err := os.Symlink(shadow, filepath.Join(data, "member/lnk")); err != nil {
		t.Fatal(err)
	}
	rules := []cpunits.PathRule{{Path: "/var/lib/etcd", Dir: true, Mode: 0o700, User: "4242", Group: "4242", Recursive: true}}
	changes, err := cpunits.ApplyPaths(root, rules, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "set owner 4242:4242 on 6 entries below /var/lib/etcd"; len(changes) != 2 || changes[0] != want {
		t.Errorf("changes %q, want %q first (the directory's own after)", changes, want)
	}
	for _, p := range []string{"member", "member/lnk", "member/snap", "member/snap/db", "member/wal", "member/wal/0.wal"} {
		fi, err := os.Lstat(filepath.Join(data, p))
		if err != nil {
			t.Fatal(err)
		}
		if u, g := files.Owner(fi); u != 4242 || g != 4242 {
			t.Errorf("%s: owner %d:%d, want 4242:4242", p, u, g)
		}
	}
	fi, err := os.Stat(shadow)
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := files.Owner(fi); u != 0 {
		t.Errorf("%s, a symlink's target: owner %d, want 0", shadow, u)
	}
	if changes, err := cpunits.ApplyPaths(root, rules, false); err != nil || len(changes) != 0 {
		t.Errorf("rerun: %q, %v; want nothing changed", changes, err)
	}
}
