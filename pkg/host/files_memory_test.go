//go:build !windows

package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/spec"
)

// bigFileSize is the size of the binaries the memory tests deliver: as
// large as a kubelet is, a fifth of it.
const bigFileSize = 20 << 20

// writeBigFile writes size bytes to path in 1 MiB pieces (never whole
// in memory), every piece different, the last byte lastByte; it returns
// the content's hex SHA-256.
func writeBigFile(t *testing.T, path string, size int, lastByte byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	w := io.MultiWriter(f, h)
	piece := make([]byte, 1<<20)
	for off := 0; off < size; off += len(piece) {
		for i := range piece {
			piece[i] = byte(off>>20 + i)
		}
		n := min(len(piece), size-off)
		if off+n == size {
			piece[n-1] = lastByte
		}
		if _, err := w.Write(piece[:n]); err != nil {
			t.Fatal(err)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fileSHA256 hashes a file in pieces.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// allocatedBy returns the bytes the Go heap allocated while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestFilesStepMemoryDoesNotGrowWithFileSize: a binary of spec.host.files
// with a verified source (a new kubelet over the old one) is fetched,
// verified, compared and written in pieces. Reading it whole, and the
// file it replaces whole, made `machineadm upgrade` peak at 340 MiB of
// resident memory for an 88 MiB kubelet (the upgrade benchmark). The
// old file here differs from the new one only in its last byte, so the
// comparison has to read both to the end.
func TestFilesStepMemoryDoesNotGrowWithFileSize(t *testing.T) {
	h := newTestHost(t)
	sum := writeBigFile(t, filepath.Join(h.root, "opt/bin/tool"), bigFileSize, 1)
	writeBigFile(t, filepath.Join(h.root, "usr/bin/tool"), bigFileSize, 2)
	cfg := filesSpec(t, fmt.Sprintf(`    - path: /usr/bin/tool
      mode: "0755"
      source: {url: "file:///opt/bin/tool", sha256: %s}
    - path: /usr/bin/new-tool
      mode: "0755"
      source: {url: "file:///opt/bin/tool", sha256: %s}
`, sum, sum))
	run := func(env *Env) Result {
		t.Helper()
		var res Result
		alloc := allocatedBy(func() {
			res = runFilesStep(t, cfg, env)
		})
		// Two files of 20 MiB each went through; a few pieces of 256 KiB
		// (staging, comparing, copying) are all that may be allocated.
		if alloc > 8<<20 {
			t.Errorf("the files step allocated %d MiB for two files of %d MiB: content held in memory", alloc>>20, bigFileSize>>20)
		}
		return res
	}
	res := run(h.env(nil))
	want := []string{"rewrote /usr/bin/tool (0755, 0:0, 20971520 bytes)", "wrote /usr/bin/new-tool (0755, 0:0, 20971520 bytes)"}
	if strings.Join(res.Changes, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(res.Changes, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range []string{"usr/bin/tool", "usr/bin/new-tool"} {
		if got := fileSHA256(t, filepath.Join(h.root, p)); got != sum {
			t.Errorf("%s: sha256 %s, want the source's %s", p, got, sum)
		}
	}
	// A second run compares both files to the end and changes nothing.
	if res := run(h.env(nil)); res.Changed {
		t.Errorf("second run changed: %v", res.Changes)
	}
	// A dry run names the size and does not print the content.
	writeBigFile(t, filepath.Join(h.root, "usr/bin/tool"), bigFileSize, 3)
	var out bytes.Buffer
	env := h.env(&out)
	env.DryRun = true
	res = run(env)
	if !res.Changed || !strings.Contains(out.String(), "/usr/bin/tool: content not shown (larger than 1048576 bytes); 20971520 bytes -> 20971520 bytes") {
		t.Errorf("dry run: changed %v, output:\n%s", res.Changed, out.String())
	}
	if out.Len() > 4096 {
		t.Errorf("dry run printed %d bytes for binaries", out.Len())
	}
}

// filesSpec loads a control-plane spec whose spec.host.files list is
// entries (YAML list items indented as under "files:"); a spec that does
// not load fails t.
func filesSpec(t *testing.T, entries string) *machineadm.MachineBootstrapConfig {
	t.Helper()
	l, err := spec.Load([]byte(`apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: ControlPlane
  action: Init
  kubernetes: {version: v1.37.2}
  host:
    files:
`+entries), "test")
	if err != nil {
		t.Fatal(err)
	}
	return l.Config
}

// runFilesStep checks and applies the files step alone.
func runFilesStep(t *testing.T, cfg *machineadm.MachineBootstrapConfig, env *Env) Result {
	t.Helper()
	for _, s := range Steps(cfg) {
		if s.Name != StepFiles {
			continue
		}
		if err := s.Check(context.Background(), env); err != nil {
			t.Fatalf("check: %v", err)
		}
		res, err := s.Apply(context.Background(), env)
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		return res
	}
	t.Fatal("no files step")
	return Result{}
}

// TestFilesStepAppendsToALargeFile: appending to a file larger than
// files.InlineMax (not read into memory for a comparison) still keeps its
// content and appends once.
func TestFilesStepAppendsToALargeFile(t *testing.T) {
	h := newTestHost(t)
	big := filepath.Join(h.root, "var/log/big.log")
	sum := writeBigFile(t, big, 3<<20, '\n')
	cfg := h.fullSpec(t, nil)
	cfg.Spec.Host.Files = []machineadm.File{{Path: "/var/log/big.log", Content: "tail line\n", Mode: "0644", Owner: "0", Group: "0", Append: true}}
	for i := range 2 {
		res := runFilesStep(t, cfg, h.env(nil))
		if res.Changed != (i == 0) {
			t.Errorf("run %d: changed %v %v", i, res.Changed, res.Changes)
		}
	}
	data, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data[:len(data)-len("tail line\n")])
	if len(data) != 3<<20+len("tail line\n") || hex.EncodeToString(s[:]) != sum || !bytes.HasSuffix(data, []byte("\ntail line\n")) {
		t.Errorf("appended file: %d bytes, head kept %v", len(data), hex.EncodeToString(s[:]) == sum)
	}
}
