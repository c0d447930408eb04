package cpunits_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// TestApplyPathsRecursiveSharedDirRefused: a Recursive rule at a
// directory the rest of the system shares (a careless --wal-dir=/etc,
// --wal-dir=/var/lib/etcd/.., which is /var/lib, or a symlink to it),
// or above the path of another rule with another owner (--wal-dir at
// the directory that holds the cluster's certificates), is refused
// naming it, in a dry run too,
// and nothing below it changes owner: the walk gave etcd /etc/shadow,
// the kubelet's files and the CA key.
func TestApplyPathsRecursiveSharedDirRefused(t *testing.T) {
	root, _, _ := protectedEtcdRule(t)
	for _, p := range []string{"var/lib/kubelet/config.yaml", "srv/k8s/pki/ca.key"} {
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/var/lib", filepath.Join(root, "var/lib/etcd-wal")); err != nil {
		t.Fatal(err)
	}
	etcd := func(p string) cpunits.PathRule {
		return cpunits.PathRule{Path: p, Dir: true, Mode: 0o700, User: "4242", Group: "4242", Recursive: true}
	}
	for _, c := range []struct {
		name  string
		rules []cpunits.PathRule
		want  string
	}{
		{"etc", []cpunits.PathRule{etcd("/etc")}, "/etc"},
		{"dotdot", []cpunits.PathRule{etcd("/var/lib/etcd/..")}, "/var/lib"},
		{"root", []cpunits.PathRule{etcd("/")}, "/"},
		{"above another owner's", []cpunits.PathRule{
			{Path: "/srv/k8s/pki", Dir: true, Mode: 0o755, User: "0", Group: "0"},
			etcd("/srv/k8s"),
		}, "/srv/k8s/pki"},
		{"symlink to /var/lib", []cpunits.PathRule{etcd("/var/lib/etcd-wal")}, "/var/lib"},
	} {
		for _, dry := range []bool{true, false} {
			_, err := cpunits.ApplyPaths(root, c.rules, dry)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "directory of its own") {
				t.Errorf("%s (dry run %v): %v, want a refusal naming %s", c.name, dry, err, c.want)
			}
		}
	}
	for _, p := range []string{"etc/shadow", "etc", "var/lib/kubelet/config.yaml", "var/lib", "srv/k8s/pki/ca.key", "srv/k8s"} {
		if u := ownerOf(t, filepath.Join(root, p)); u != 0 {
			t.Errorf("%s owner %d, want 0 (nothing changed)", p, u)
		}
	}
	// The data directory itself is walked as before.
	if _, err := cpunits.ApplyPaths(root, []cpunits.PathRule{etcd("/var/lib/etcd")}, false); err != nil {
		t.Fatal(err)
	}
}

// TestApplyPathsRecursiveSharedDirByAnotherName: a directory the system
// shares reached by another name than its own is refused as it is: a
// --wal-dir at /data/varlib where /var/lib is a symlink to it, at /data
// above it, or at a bind mount of /var/lib. Its name was all that was
// checked, and the walk gave etcd the kubelet's files.
func TestApplyPathsRecursiveSharedDirByAnotherName(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file another owner")
	}
	root := t.TempDir()
	for _, d := range []string{"data/varlib/kubelet", "var", "srv/bound"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(root, "data/varlib/kubelet/config.yaml")
	if err := os.WriteFile(config, []byte("kubelet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/data/varlib", filepath.Join(root, "var/lib")); err != nil {
		t.Fatal(err)
	}
	paths := []string{"/data/varlib", "/data"}
	bound := filepath.Join(root, "srv/bound")
	if err := bindMount(filepath.Join(root, "data/varlib"), bound); err != nil {
		t.Log("no bind mount here:", err)
	} else {
		t.Cleanup(func() { unmount(bound) })
		paths = append(paths, "/srv/bound")
	}
	for _, p := range paths {
		for _, dry := range []bool{true, false} {
			rules := []cpunits.PathRule{{Path: p, Dir: true, Mode: 0o700, User: "4242", Group: "4242", Recursive: true}}
			_, err := cpunits.ApplyPaths(root, rules, dry)
			if err == nil || !strings.Contains(err.Error(), "/var/lib") || !strings.Contains(err.Error(), "directory of its own") {
				t.Errorf("%s (dry run %v): %v, want a refusal naming /var/lib", p, dry, err)
			}
		}
	}
	for _, p := range []string{"data/varlib/kubelet/config.yaml", "data/varlib", "data"} {
		if u := ownerOf(t, filepath.Join(root, p)); u != 0 {
			t.Errorf("%s owner %d, want 0 (nothing changed)", p, u)
		}
	}
	// A directory of its own beside them is walked.
	if _, err := cpunits.ApplyPaths(root, []cpunits.PathRule{{Path: "/data/etcd", Dir: true, Mode: 0o700, User: "4242", Group: "4242", Recursive: true}}, false); err != nil {
		t.Fatal(err)
	}
}

// TestApplyPathsRecursiveAboveTheRootRefused: under --root DIR, a
// Recursive rule's directory that is a directory above DIR on the
// machine (a bind mount of it into the image) holds the whole image,
// its /var/lib and /etc too, and is refused: the directories compared
// stopped at DIR, so none was the rule's, and the walk went through
// the image and whatever else is beside it.
func TestApplyPathsRecursiveAboveTheRootRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind-mount")
	}
	base := t.TempDir()
	root := filepath.Join(base, "img")
	for _, d := range []string{"var/lib/kubelet", "data/wal"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wal := filepath.Join(root, "data/wal")
	if err := bindMount(base, wal); err != nil {
		t.Skip("no bind mount here:", err)
	}
	t.Cleanup(func() { unmount(wal) })
	rules := []cpunits.PathRule{{Path: "/data/wal", Dir: true, Mode: 0o700, User: "4242", Group: "4242", Recursive: true}}
	_, err := cpunits.ApplyPaths(root, rules, true)
	if err == nil || !strings.Contains(err.Error(), "/data/wal") || !strings.Contains(err.Error(), "directory of its own") {
		t.Errorf("a --wal-dir that is a directory above the root: %v, want a refusal naming it", err)
	}
}

// TestApplyPathsRecursiveAboveTheRootThroughSymlinkRefused: under
// --root DIR where DIR is a symlink (--root /mnt/img, /mnt/img ->
// /srv/images/img), a Recursive rule's directory that is a directory
// above the one DIR points to (a bind mount of /srv/images into the
// image) holds the whole image and is refused: the directories compared
// above DIR were those of its name (/mnt, /), not of the directory it
// is, so the walk went through the image.
func TestApplyPathsRecursiveAboveTheRootThroughSymlinkRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind-mount")
	}
	base := t.TempDir()
	images := filepath.Join(base, "srv/images")
	for _, d := range []string{"img/var/lib/kubelet", "img/data/wal"} {
		if err := os.MkdirAll(filepath.Join(images, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(base, "img")
	if err := os.Symlink(filepath.Join(images, "img"), root); err != nil {
		t.Fatal(err)
	}
	wal := filepath.Join(images, "img/data/wal")
	if err := bindMount(images, wal); err != nil {
		t.Skip("no bind mount here:", err)
	}
	t.Cleanup(func() { unmount(wal) })
	rules := []cpunits.PathRule{{Path: "/data/wal", Dir: true, Mode: 0o700, User: "4242", Group: "4242", Recursive: true}}
	_, err := cpunits.ApplyPaths(root, rules, true)
	if err == nil || !strings.Contains(err.Error(), "/data/wal") || !strings.Contains(err.Error(), "directory of its own") {
		t.Errorf("a --wal-dir that is a directory above the one the root's symlink points to: %v, want a refusal naming it", err)
	}
}
