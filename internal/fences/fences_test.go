// Package fences holds the architecture's rules as tests over `go list`:
// a change that breaks one fails CI instead of waiting for a review.
package fences

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/machineadm/machineadm"

// pkgInfo is the part of `go list -json` the fences read.
type pkgInfo struct {
	ImportPath   string
	Imports      []string
	TestImports  []string // imports of the package's _test.go files
	XTestImports []string // imports of its external (package x_test) tests
	Deps         []string
}

// list runs `go list -json` on patterns: each package with its direct
// Imports and every transitive dependency (Deps) — what `go list -deps`
// walks.
func list(t *testing.T, goos string, patterns ...string) []pkgInfo {
	t.Helper()
	c := exec.Command("go", append([]string{"list", "-json"}, patterns...)...)
	c.Dir = "../.."
	if goos != "" {
		c.Env = append(c.Environ(), "GOOS="+goos)
	}
	out, err := c.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkgInfo
	for {
		var p pkgInfo
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if s == p || strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}

// TestOnlyTheAdapterImportsKubeadm: only pkg/kubeadm/... (and the binary)
// imports k8s.io/kubernetes/...; the rest of machineadm reaches kubeadm
// through the adapter. Checked for every OS the binary is built for.
func TestOnlyTheAdapterImportsKubeadm(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		for _, p := range list(t, goos, module+"/...") {
			if hasPrefixAny(p.ImportPath, module+"/pkg/kubeadm", module+"/cmd/machineadm", module+"/hack") {
				continue
			}
			for _, imp := range p.Imports {
				if hasPrefixAny(imp, "k8s.io/kubernetes") {
					t.Errorf("%s (GOOS=%s) imports %s: only pkg/kubeadm/... may import kubeadm", p.ImportPath, goos, imp)
				}
			}
		}
	}
}

// TestAPIImportsNoRuntime: the spec API packages depend on none of
// machineadm's runtime packages.
func TestAPIImportsNoRuntime(t *testing.T) {
	runtime := []string{module + "/pkg/redact", module + "/pkg/report", module + "/pkg/host", module + "/pkg/phases",
		module + "/pkg/cmd", module + "/pkg/session", module + "/pkg/kubeadm", module + "/pkg/render", module + "/pkg/seal"}
	for _, p := range list(t, "", module+"/pkg/apis/...") {
		for _, dep := range p.Deps {
			if hasPrefixAny(dep, runtime...) {
				t.Errorf("%s depends on %s: the API must not depend on the runtime", p.ImportPath, dep)
			}
		}
	}
}

// TestHostDoesNotImportReport: host steps give their failures a class
// (pkg/errclass); they never depend on the report package.
func TestHostDoesNotImportReport(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		for _, p := range list(t, goos, module+"/pkg/host/...") {
			for _, dep := range p.Deps {
				if hasPrefixAny(dep, module+"/pkg/report") {
					t.Errorf("%s (GOOS=%s) depends on %s", p.ImportPath, goos, dep)
				}
			}
		}
	}
}

// TestErrclassIsALeaf: the error classes import only the standard library.
func TestErrclassIsALeaf(t *testing.T) {
	for _, p := range list(t, "", module+"/pkg/errclass") {
		for _, dep := range p.Deps {
			if strings.Contains(strings.Split(dep, "/")[0], ".") {
				t.Errorf("errclass depends on %s", dep)
			}
		}
	}
}
