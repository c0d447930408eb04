//go:build !windows

package cpunits_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// TestApplyPathsBreaksHardLink: a rule's file that has another name (a
// hard link: a local user's link to /etc/shadow) gets its mode by being
// replaced, not in place, so the other name keeps its mode and content.
func TestApplyPathsBreaksHardLink(t *testing.T) {
	root := t.TempDir()
	for p, c := range map[string]string{"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n", "etc/group": "root:x:0:\n", "etc/shadow": "secret\n"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o640); err != nil {
			t.Fatal(err)
		}
	}
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
	changes, err := cpunits.ApplyPaths(root, rules, false)
	if err != nil || len(changes) != 1 {
		t.Fatalf("ApplyPaths: %q, %v", changes, err)
	}
	sfi, err := os.Stat(shadow)
	if err != nil {
		t.Fatal(err)
	}
	kfi, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(sfi, kfi) || sfi.Mode().Perm() != 0o640 || kfi.Mode().Perm() != 0o600 {
		t.Errorf("same file %v, %s mode %04o (want 0640 kept), %s mode %04o (want 0600)", os.SameFile(sfi, kfi), shadow, sfi.Mode().Perm(), key, kfi.Mode().Perm())
	}
	for _, p := range []string{shadow, key} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "secret\n" {
			t.Errorf("%s: %q, %v; want the content kept", p, b, err)
		}
	}
}
