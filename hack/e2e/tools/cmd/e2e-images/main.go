// Command e2e-images builds the container images the e2e machines import
// instead of pulling: each is one static binary on an empty base, written as
// a docker-archive tarball that `ctr -n k8s.io images import` accepts.
//
// Usage:
//
//	e2e-images -out DIR [-base ROOT] NAME:TAG=BINARY[:ENTRYPOINT] ...
//
// NAME:TAG is the full image reference (for example
// "registry.k8s.io/kube-apiserver:v1.37.2"); BINARY is a path on this host;
// the binary is placed at /usr/local/bin/<base name> (on PATH, as kubeadm's
// manifests call components by name) unless ENTRYPOINT gives another absolute
// path, which then also becomes the image's entrypoint. The tarball is
// DIR/<base name of NAME>.tar.
//
// -base ROOT adds, below the binary's layer, a layer holding the tree ROOT
// (directories, regular files and symbolic links, owned by root, modes
// kept): the user space a binary needs besides itself, for example the
// iptables commands and their shared libraries kube-proxy runs, staged from
// Debian packages by hack/e2e/images.sh. Every image named on the command
// line gets it.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	out := flag.String("out", "", "directory for the image tarballs (required)")
	base := flag.String("base", "", "directory tree laid below the binary as the image's first layer")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: e2e-images -out DIR [-base ROOT] NAME:TAG=BINARY[:ENTRYPOINT] ...")
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, arg := range flag.Args() {
		spec, err := parseSpec(arg)
		if err != nil {
			log.Fatal(err)
		}
		spec.base = *base
		path := filepath.Join(*out, spec.fileName())
		if err := build(spec, path); err != nil {
			log.Fatalf("%s: %v", spec.ref, err)
		}
		fmt.Printf("%s -> %s\n", spec.ref, path)
	}
}

// imageSpec is one image to build.
type imageSpec struct {
	ref        string // full reference with tag
	binary     string // path on this host
	target     string // absolute path inside the image
	entrypoint bool   // target is the image entrypoint
	base       string // optional directory tree for a first layer
}

func parseSpec(arg string) (imageSpec, error) {
	ref, rest, ok := strings.Cut(arg, "=")
	if !ok || ref == "" || rest == "" {
		return imageSpec{}, fmt.Errorf("bad image argument %q: want NAME:TAG=BINARY[:ENTRYPOINT]", arg)
	}
	s := imageSpec{ref: ref}
	bin, entry, hasEntry := strings.Cut(rest, ":")
	s.binary = bin
	s.target = "/usr/local/bin/" + filepath.Base(bin)
	if hasEntry {
		if !strings.HasPrefix(entry, "/") {
			return imageSpec{}, fmt.Errorf("bad image argument %q: entrypoint must be absolute", arg)
		}
		s.target, s.entrypoint = entry, true
	}
	return s, nil
}

// fileName is the tarball name: the repository's last path element.
func (s imageSpec) fileName() string {
	name := s.ref
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return filepath.Base(name) + ".tar"
}
