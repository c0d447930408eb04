package fences

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fenceRow matches a rule of docs/architecture.md's import table: the file
// and the name of the test that enforces it.
var fenceRow = regexp.MustCompile("\\| ([\\w./-]+_test\\.go): `(Test\\w+)` \\|")

// TestFloorPlanNamesRealFences: each rule of docs/architecture.md names a
// test that exists in the file it says, and each floor fence of
// floors_test.go is in the floor plan, so the plan and the fences cannot
// drift apart.
func TestFloorPlanNamesRealFences(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := fenceRow.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 10 {
		t.Fatalf("docs/architecture.md names %d fence tests, want the import table's rules", len(rows))
	}
	named := map[string]bool{}
	for _, r := range rows {
		named[r[2]] = true
		src, err := os.ReadFile(filepath.Join("../..", r[1]))
		if err != nil {
			t.Errorf("docs/architecture.md: %s: %v", r[2], err)
			continue
		}
		if !strings.Contains(string(src), "func "+r[2]+"(t *testing.T)") {
			t.Errorf("docs/architecture.md names %s in %s, which has no such test", r[2], r[1])
		}
	}
	src, err := os.ReadFile("floors_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(`).FindAllStringSubmatch(string(src), -1) {
		if !named[m[1]] {
			t.Errorf("floors_test.go: %s is not in docs/architecture.md's import table", m[1])
		}
	}
}
