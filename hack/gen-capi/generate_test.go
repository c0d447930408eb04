package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestManifestsCurrent regenerates the manifests with the pinned
// controller-gen (built from hack/tools; about 80 s cold, cached after)
// and fails when the committed ones in contrib/cluster-api differ: run
// `make capi-manifests`.
func TestManifestsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds controller-gen; skipped with -short")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cg := filepath.Join(t.TempDir(), "controller-gen")
	build := exec.Command("go", "build", "-o", cg, "sigs.k8s.io/controller-tools/cmd/controller-gen")
	build.Dir = filepath.Join(root, "hack", "tools")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building controller-gen: %v\n%s", err, b)
	}
	out := t.TempDir()
	if err := generate(cg, root, out); err != nil {
		t.Fatal(err)
	}
	committed := filepath.Join(root, "contrib", "cluster-api")
	var stale []string
	filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(committed, rel))
		if err != nil || !bytes.Equal(got, want) {
			stale = append(stale, rel)
		}
		return nil
	})
	if len(stale) > 0 {
		t.Fatalf("stale manifests in contrib/cluster-api (run make capi-manifests): %s", strings.Join(stale, ", "))
	}
	// The contract label is what Cluster API reads to find the version.
	b, _ := os.ReadFile(filepath.Join(committed, "bootstrap-components.yaml"))
	if n := bytes.Count(b, []byte(ContractLabel+": "+ContractValue)); n != 2 {
		t.Fatalf("bootstrap-components.yaml: %d CRDs carry %s: %s, want 2", n, ContractLabel, ContractValue)
	}
}
