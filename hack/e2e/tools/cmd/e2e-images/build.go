package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is the fixed modification time of every layer entry, so the same
// binary always yields the same image digest.
var epoch = time.Unix(0, 0).UTC()

// build writes the image described by s as a docker-archive tarball at out.
func build(s imageSpec, out string) error {
	tag, err := name.NewTag(s.ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("parse reference: %w", err)
	}
	data, err := os.ReadFile(s.binary)
	if err != nil {
		return fmt.Errorf("read binary: %w", err)
	}
	layerTar, err := layerBytes(s.target, data)
	if err != nil {
		return err
	}
	var layers []v1.Layer
	if s.base != "" {
		baseTar, err := treeLayerBytes(s.base)
		if err != nil {
			return fmt.Errorf("base layer %s: %w", s.base, err)
		}
		layers = append(layers, tarLayer(baseTar))
	}
	layers = append(layers, tarLayer(layerTar))
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = runtime.GOARCH, "linux", v1.Time{Time: epoch}
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if s.entrypoint {
		cf.Config.Entrypoint = []string{s.target}
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		return fmt.Errorf("write tarball: %w", err)
	}
	return os.Rename(tmp, out)
}

// tarLayer wraps an uncompressed layer tar.
func tarLayer(b []byte) v1.Layer {
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	})
	if err != nil {
		panic(err) // LayerFromOpener fails only when the opener does
	}
	return l
}

// treeLayerBytes returns an uncompressed tar of the tree below root, in
// lexical order: directories, regular files and symbolic links with their
// permission bits, owned by root, at the fixed epoch, so the same tree
// always yields the same layer. Any other file type is an error.
func treeLayerBytes(root string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: int64(fi.Mode().Perm()), ModTime: epoch}
		var data []byte
		switch {
		case fi.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case fi.Mode()&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			if hdr.Linkname, err = os.Readlink(p); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			hdr.Typeflag = tar.TypeReg
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
			hdr.Size = int64(len(data))
		default:
			return fmt.Errorf("%s: unsupported file type %s", p, fi.Mode().Type())
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layerBytes returns an uncompressed tar with the parent directories of
// target, a world-writable /tmp and the binary at target (mode 0755).
func layerBytes(target string, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := []string{"tmp/"}
	for d := path.Dir(strings.TrimPrefix(target, "/")); d != "."; d = path.Dir(d) {
		dirs = append([]string{d + "/"}, dirs...)
	}
	for _, d := range dirs {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(target, "/"), Mode: 0o755, Size: int64(len(data)), ModTime: epoch}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
