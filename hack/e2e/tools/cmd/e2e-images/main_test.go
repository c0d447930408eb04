package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		arg, target, file string
		entry, bad        bool
	}{
		{arg: "r.invalid/kube-apiserver:v1.37.2=/c/bin/kube-apiserver", target: "/usr/local/bin/kube-apiserver", file: "kube-apiserver.tar"},
		{arg: "r.invalid:5000/pause:3.10.2=/c/bin/pause:/pause", target: "/pause", entry: true, file: "pause.tar"},
		{arg: "r.invalid/etcd:3.7.0-0", bad: true},
		{arg: "r.invalid/pause:3.10.2=/c/bin/pause:pause", bad: true},
	} {
		s, err := parseSpec(tc.arg)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: no error", tc.arg)
			}
			continue
		}
		if err != nil || s.target != tc.target || s.entrypoint != tc.entry || s.fileName() != tc.file {
			t.Errorf("%q: got %+v file %q err %v", tc.arg, s, s.fileName(), err)
		}
	}
}

// TestBuild writes an image and reads it back as ctr would: the tag, the
// entrypoint, PATH, the platform and the binary (0755) in the one layer.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pause")
	if err := os.WriteFile(bin, []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := parseSpec("r.invalid/pause:3.10.2=" + bin + ":/pause")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, s.fileName())
	if err := build(s, out); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("r.invalid/pause:3.10.2")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/pause" || len(cf.Config.Env) != 1 {
		t.Errorf("config: os %q entrypoint %v env %v", cf.OS, cf.Config.Entrypoint, cf.Config.Env)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "pause" {
			b, _ := io.ReadAll(tr)
			found = bytes.Equal(b, []byte("#!binary")) && h.Mode == 0o755
		}
	}
	if !found {
		t.Error("layer lacks /pause with the binary's content and mode 0755")
	}
	// Same input, same image: the digest is reproducible.
	out2 := filepath.Join(dir, "again.tar")
	if err := build(s, out2); err != nil {
		t.Fatal(err)
	}
	img2, _ := tarball.ImageFromPath(out2, &tag)
	d1, _ := img.Digest()
	d2, _ := img2.Digest()
	if d1 != d2 {
		t.Errorf("digests differ: %s %s", d1, d2)
	}
}

// TestBuildBase lays a staged tree below the binary: two layers, the first
// holding the tree's file (mode kept) and symbolic link; a FIFO in the tree
// is refused.
func TestBuildBase(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "usr/sbin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/sbin/xtables-nft-multi"), []byte("xt"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("xtables-nft-multi", filepath.Join(root, "usr/sbin/iptables")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kube-proxy")
	if err := os.WriteFile(bin, []byte("kp"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := parseSpec("r.invalid/kube-proxy:v1.37.2=" + bin)
	if err != nil {
		t.Fatal(err)
	}
	s.base = root
	out := filepath.Join(dir, s.fileName())
	if err := build(s, out); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("r.invalid/kube-proxy:v1.37.2")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers: %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
	}
	if h := got["usr/sbin/xtables-nft-multi"]; h == nil || h.Typeflag != tar.TypeReg || h.Mode != 0o750 || h.Uid != 0 {
		t.Errorf("base layer file: %+v", h)
	}
	if h := got["usr/sbin/iptables"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "xtables-nft-multi" {
		t.Errorf("base layer symlink: %+v", h)
	}
	if h := got["usr/"]; h == nil || h.Typeflag != tar.TypeDir {
		t.Errorf("base layer directory: %+v", h)
	}

	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := build(s, out); err == nil || !strings.Contains(err.Error(), "unsupported file type") {
		t.Errorf("FIFO in the base: %v", err)
	}
}
