//go:build !windows

package cpunits_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/files"
)

// TestApplyPathsRefusesHardLink: a rule's file that has another name (a
// hard link: a local user's link to /etc/shadow) is refused with an
// error naming it, in a dry run too, as below a Recursive rule: given
// the rule's mode and owner in place, /etc/shadow would be the owner's;
// replaced with a copy, its content would be. Both names keep their
// mode and content, and stay one file.
func TestApplyPathsRefusesHardLink(t *testing.T) {
	root := t.TempDir()
	hostEtc(t, root)
	shadow := filepath.Join(root, "etc/shadow")
	if err := os.Chmod(shadow, 0o640); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(root, "etc/kubernetes/pki/etcd/server.key")
	if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(shadow, key); err != nil {
		t.Fatal(err)
	}
	uid, gid := strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())
	rules := []cpunits.PathRule{{Path: "/etc/kubernetes/pki/etcd/server.key", Mode: 0o600, User: uid, Group: gid}}
	for _, dryRun := range []bool{true, false} {
		if changes, err := cpunits.ApplyPaths(root, rules, dryRun); err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "hard links") {
			t.Errorf("ApplyPaths (dry run %v): %q, %v; want an error naming %s", dryRun, changes, err, key)
		}
	}
	sfi, err := os.Stat(shadow)
	if err != nil {
		t.Fatal(err)
	}
	kfi, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(sfi, kfi) || sfi.Mode().Perm() != 0o640 {
		t.Errorf("same file %v, %s mode %04o; want the link left, 0640 kept", os.SameFile(sfi, kfi), shadow, sfi.Mode().Perm())
	}
	if b, err := os.ReadFile(shadow); err != nil || string(b) != "secret\n" {
		t.Errorf("%s: %q, %v; want the content kept", shadow, b, err)
	}
}

// TestApplyPathsRecursiveRefusesHardLink: a file below a Recursive
// rule's directory that has another name (the directory's owner, etcd,
// linked /etc/shadow into its data directory) is refused: given to etcd
// in place, /etc/shadow would be etcd's; replaced with a copy given to
// etcd, its content would be etcd's to read. Both names keep their
// owner, mode and content. A dry run says so too.
func TestApplyPathsRecursiveRefusesHardLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file another owner")
	}
	root := t.TempDir()
	hostEtc(t, root)
	shadow := filepath.Join(root, "etc/shadow")
	data := filepath.Join(root, "var/lib/etcd")
	if err := os.MkdirAll(filepath.Join(data, "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(data, "member/snap")
	if err := os.Link(shadow, link); err != nil {
		t.Fatal(err)
	}
	rules := []cpunits.PathRule{{Path: "/var/lib/etcd", Dir: true, Mode: 0o700, User: "4242", Group: "4242", Recursive: true}}
	for _, dryRun := range []bool{true, false} {
		if _, err := cpunits.ApplyPaths(root, rules, dryRun); err == nil || !strings.Contains(err.Error(), link) {
			t.Errorf("ApplyPaths (dry run %v): %v; want an error naming %s", dryRun, err, link)
		}
	}
	sfi, err := os.Stat(shadow)
	if err != nil {
		t.Fatal(err)
	}
	lfi, err := os.Stat(link)
	if err != nil {
		t.Fatal(err)
	}
	su, _ := files.Owner(sfi)
	if !os.SameFile(sfi, lfi) || su != 0 || sfi.Mode().Perm() != 0o640 {
		t.Errorf("same file %v, %s owner %d mode %04o; want the link left, owner 0, 0640 kept", os.SameFile(sfi, lfi), shadow, su, sfi.Mode().Perm())
	}
	if b, err := os.ReadFile(shadow); err != nil || string(b) != "secret\n" {
		t.Errorf("%s: %q, %v; want the content kept", shadow, b, err)
	}
}

// hostEtc writes root's passwd and group (root only) and its shadow
// ("secret\n"), each 0640: the files a hard link below a rule's path
// would hand over.
func hostEtc(t *testing.T, root string) {
	t.Helper()
	for p, c := range map[string]string{"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n", "etc/group": "root:x:0:\n", "etc/shadow": "secret\n"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o640); err != nil {
			t.Fatal(err)
		}
	}
}
