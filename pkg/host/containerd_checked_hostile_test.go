//go:build !windows

package host

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testfifo"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// TestContainerdRecordSymlinkNotFollowed: a symbolic link in the record's
// place, to a file of the machine (here the root's /etc/passwd), is
// neither trusted nor written through: the check runs, and the record
// replaces the link while the file it named keeps its bytes.
func TestContainerdRecordSymlinkNotFollowed(t *testing.T) {
	h := newTestHost(t)
	installContainerd(t, h.root, "containerd v1")
	cfg := h.fullSpec(t, nil)

	// A record the installed binary would match, held by the target.
	c := &countingContainerd{}
	runAll(t, cfg, c.env(h))
	record := filepath.Join(h.root, containerdCheckedPath)
	good, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(h.root, "etc/passwd")
	before, _ := os.ReadFile(victim)
	for name, target := range map[string]string{"machine file": "/etc/passwd", "a valid record elsewhere": "/etc/record.json"} {
		if err := os.WriteFile(filepath.Join(h.root, "etc/record.json"), good, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(record)
		if err := os.Symlink(target, record); err != nil {
			t.Fatal(err)
		}
		*c = countingContainerd{}
		runAll(t, cfg, c.env(h))
		if c.verifies != 1 {
			t.Errorf("%s: %d verify calls, want 1 (a linked record is not the record)", name, c.verifies)
		}
		if after, _ := os.ReadFile(victim); !bytes.Equal(after, before) {
			t.Fatalf("%s: the record was written through the link into /etc/passwd:\n%s", name, after)
		}
		if fi, err := os.Lstat(record); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: the record is %v, %v; want a regular file in the link's place", name, fi, err)
		}
	}
}

// TestContainerdRecordBadFiles: a malformed, huge, truncated, FIFO or
// device record, or one naming another binary or a digest never checked
// by this binary, never skips the check, never blocks, and is replaced.
func TestContainerdRecordBadFiles(t *testing.T) {
	h := newTestHost(t)
	installContainerd(t, h.root, "containerd v1")
	cfg := h.fullSpec(t, nil)
	c := &countingContainerd{}
	runAll(t, cfg, c.env(h))
	record := filepath.Join(h.root, containerdCheckedPath)
	good, _ := os.ReadFile(record)
	var rec checkedRecord
	if err := json.Unmarshal(good, &rec); err != nil {
		t.Fatal(err)
	}
	forge := func(mut func(*checkedRecord)) []byte {
		r := rec
		mut(&r)
		b, _ := json.Marshal(r)
		return b
	}
	huge := append(bytes.Repeat([]byte(" "), 64<<10), good...)
	cases := map[string]func(string){
		"malformed": func(p string) { os.WriteFile(p, []byte("{\"binary\": "), 0o600) },
		"huge":      func(p string) { os.WriteFile(p, huge, 0o600) },
		"empty":     func(p string) { os.WriteFile(p, nil, 0o600) },
		"fifo":      func(p string) { testfifo.Make(t, p) },
		"directory": func(p string) { os.Mkdir(p, 0o700) },
		"dev/zero":  func(p string) { os.Symlink("/dev/zero", p) },
		"other ID": func(p string) {
			os.WriteFile(p, forge(func(r *checkedRecord) { r.ID = strings.Replace(r.ID, "ino=", "ino=1", 1) }), 0o600)
		},
		"other path": func(p string) {
			os.WriteFile(p, forge(func(r *checkedRecord) { r.Binary = "/usr/local/bin/containerd" }), 0o600)
		},
		"other digest": func(p string) {
			os.WriteFile(p, forge(func(r *checkedRecord) { r.Verified = "sha256:" + strings.Repeat("0", 64) }), 0o600)
		},
		"no ID": func(p string) { os.WriteFile(p, forge(func(r *checkedRecord) { r.ID = "" }), 0o600) },
	}
	for name, plant := range cases {
		os.RemoveAll(record)
		plant(record)
		*c = countingContainerd{}
		res := Check(t.Context(), c.env(h), Steps(cfg))
		if res != nil {
			t.Fatalf("%s: check: %v", name, res)
		}
		if c.verifies != 1 {
			t.Errorf("%s: %d verify calls, want 1", name, c.verifies)
		}
	}
	// The directory case aside, an apply leaves a good record again.
	os.RemoveAll(record)
	testfifo.Make(t, record)
	*c = countingContainerd{}
	runAll(t, cfg, c.env(h))
	if fi, err := os.Lstat(record); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("a FIFO record was not replaced: %v %v", fi, err)
	}
}

// TestContainerdRestartMarkerLinkNotFollowed: a symbolic link in the
// restart marker's place, to a file of the machine, is refused with a
// classified error before anything is written; it is neither read as a
// pending restart nor removed through (which would delete /etc/passwd).
func TestContainerdRestartMarkerLinkNotFollowed(t *testing.T) {
	h := newTestHost(t)
	cfg := h.fullSpec(t, nil)
	marker := filepath.Join(h.root, restartPending)
	if err := os.MkdirAll(filepath.Dir(marker), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", marker); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(h.root, "etc/passwd"))
	_, err := stepNamed(t, Steps(cfg), StepContainerd).Apply(t.Context(), h.env(nil))
	if class, _ := errclass.Of(err); class != errclass.HostPreparationFailed || !strings.Contains(err.Error(), restartPending) {
		t.Errorf("error %v, class %s; want HostPreparationFailed naming %s", err, class, restartPending)
	}
	if after, err := os.ReadFile(filepath.Join(h.root, "etc/passwd")); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("/etc/passwd after the run: %q, %v", after, err)
	}
	if _, err := os.Stat(filepath.Join(h.root, "etc/containerd/config.toml")); err == nil {
		t.Error("config.toml written although the marker could not be read")
	}
}

// TestContainerdCheckWithImportsRepeated: a config.toml that imports
// other files (configPatch sets imports) is checked on every run: what
// containerd's loader makes of it depends on files the record does not
// cover, which may change while config.toml and the binary do not.
func TestContainerdCheckWithImportsRepeated(t *testing.T) {
	h := newTestHost(t)
	installContainerd(t, h.root, "containerd v1")
	cfg := h.fullSpec(t, func(d string) string {
		return strings.Replace(d, "      restrictOOMScoreAdj: true\n", "      restrictOOMScoreAdj: true\n      configPatch: |\n        imports = [\"/etc/containerd/conf.d/*.toml\"]\n", 1)
	})
	c := &countingContainerd{}
	for run := range 2 {
		c.verifies = 0
		runAll(t, cfg, c.env(h))
		if c.verifies != 1 {
			t.Errorf("run %d: %d verify calls, want 1", run+1, c.verifies)
		}
	}
	config, _ := os.ReadFile(filepath.Join(h.root, "etc/containerd/config.toml"))
	if !strings.Contains(string(config), "imports") {
		t.Fatalf("config.toml has no imports:\n%s", config)
	}
	var rec checkedRecord
	if b, err := os.ReadFile(filepath.Join(h.root, containerdCheckedPath)); err == nil {
		if json.Unmarshal(b, &rec) == nil && rec.Verified == configDigest(config) {
			t.Errorf("a config.toml with imports recorded as verified: %s", b)
		}
	}
}

// TestContainerdRecordInPlaceReplacement: a binary rewritten in place
// (same inode), to the same size, its modification time set back, is
// another binary to the record: its change time moved, which no
// utimes(2) can set back; the check runs again.
func TestContainerdRecordInPlaceReplacement(t *testing.T) {
	h := newTestHost(t)
	installContainerd(t, h.root, "containerd v1")
	cfg := h.fullSpec(t, nil)
	c := &countingContainerd{}
	runAll(t, cfg, c.env(h))
	bin := filepath.Join(h.root, "usr/bin/containerd")
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	// Past the kernel's coarse timestamp tick, so that the rewrite's
	// change time differs from the install's.
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(bin, []byte("containerd v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(bin, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(bin); !os.SameFile(fi, after) || after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("not an in-place rewrite of the same size and mtime: %v %v", fi, after)
	}
	*c = countingContainerd{}
	runAll(t, cfg, c.env(h))
	if c.verifies != 1 || c.versions != 1 {
		t.Errorf("in-place replacement: %d version, %d verify calls; want 1 and 1", c.versions, c.verifies)
	}
}
