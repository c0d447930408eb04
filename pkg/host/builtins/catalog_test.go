package builtins_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	// This OS's concerns, and, so that the doc table and the field fence
	// see every OS's concerns in one test binary, the packages the other
	// OS's builtins file imports (TestCatalogLinksEveryBuiltin checks
	// that none is missing).
	_ "github.com/machineadm/machineadm/pkg/host/builtins"
	_ "github.com/machineadm/machineadm/pkg/host/domainjoin"
	_ "github.com/machineadm/machineadm/pkg/host/windows"
)

// TestCatalogLinksEveryBuiltin: every package the builtins file of
// another OS imports is imported by this test file too, so that the
// tests here see the concerns of every OS, not only of the one they run
// on (whose builtins file is linked through the package itself).
func TestCatalogLinksEveryBuiltin(t *testing.T) {
	own := imports(t, "catalog_test.go")
	files, err := filepath.Glob("builtins_*.go")
	if err != nil || len(files) < 2 {
		t.Fatalf("builtins files: %v %v", files, err)
	}
	for _, f := range files {
		if f == "builtins_"+runtime.GOOS+".go" {
			continue
		}
		for _, imp := range imports(t, f) {
			if !slices.Contains(own, imp) {
				t.Errorf("%s imports %s, which catalog_test.go does not: add it there so the doc table and the field fence see its concerns", f, imp)
			}
		}
	}
}

func imports(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range f.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		out = append(out, p)
	}
	return out
}
