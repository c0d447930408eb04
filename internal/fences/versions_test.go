package fences

import (
	"regexp"
	"testing"
)

// specVersion matches the import path of a version package of the machine
// spec: pkg/apis/machineadm/v1alpha1 and every later one beside it.
var specVersion = regexp.MustCompile(`^` + regexp.QuoteMeta(module) + `/pkg/apis/machineadm/v[0-9]+((alpha|beta)[0-9]+)?$`)

// mayImportSpecVersion: pkg/apis/machineadm/... (the hub aliases the
// newest version, and each version converts into the next), the spec
// loader pkg/spec, and, named explicitly, the Cluster API controller
// pkg/capi/controller, which emits v1alpha1 documents on purpose (see its
// mirror_test.go) — not its sub-packages.
func mayImportSpecVersion(pkg string) bool {
	return hasPrefixAny(pkg, module+"/pkg/apis/machineadm") || pkg == module+"/pkg/spec" || pkg == module+"/pkg/capi/controller"
}

// TestOnlyTheLoaderAndControllerImportSpecVersions: a machine spec
// version package is imported only where mayImportSpecVersion allows;
// everything else works on the hub, pkg/apis/machineadm. Test files count
// too. Checked for every OS the binaries are built for.
func TestOnlyTheLoaderAndControllerImportSpecVersions(t *testing.T) {
	seen := 0
	for _, goos := range []string{"linux", "windows"} {
		for _, p := range list(t, goos, module+"/...") {
			for _, imps := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
				for _, imp := range imps {
					if !specVersion.MatchString(imp) {
						continue
					}
					seen++
					if !mayImportSpecVersion(p.ImportPath) {
						t.Errorf("%s (GOOS=%s) imports the spec version package %s: use the hub, pkg/apis/machineadm (only pkg/apis/..., pkg/spec and pkg/capi/controller may import a version)", p.ImportPath, goos, imp)
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no package imports a spec version package: the fence matches the wrong path")
	}
}
