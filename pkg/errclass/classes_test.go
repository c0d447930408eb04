package errclass

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/doctable"
)

var update = flag.Bool("update", false, "rewrite docs/report.md's error class table from the registry")

// classConstants returns the name and value of every constant of type
// Class declared in this package's non-test files.
func classConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Class" {
					continue
				}
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s: constant %s is not a string literal", name, n.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					consts[n.Name] = v
				}
			}
		}
	}
	return consts
}

// TestRegistryHasEveryConstant: every Class constant has exactly one row
// in the registry, and every row has a hint and both documentation lines.
func TestRegistryHasEveryConstant(t *testing.T) {
	consts := classConstants(t)
	if len(consts) < 10 {
		t.Fatalf("found only %d Class constants; the parse is wrong", len(consts))
	}
	rows := map[Class]int{}
	for _, r := range Infos() {
		rows[r.Class]++
		if r.Hint == "" || r.Means == "" || r.Check == "" {
			t.Errorf("class %s: hint, means and check are all required", r.Class)
		}
		for _, s := range []string{r.Means, r.Check} {
			if strings.ContainsAny(s, "|\n") {
				t.Errorf("class %s: a documentation line may hold no | or newline (it is a Markdown table cell)", r.Class)
			}
		}
	}
	for name, v := range consts {
		if name != v {
			t.Errorf("constant %s has the value %q; a class's word is its constant's name", name, v)
		}
		if n := rows[Class(v)]; n != 1 {
			t.Errorf("class constant %s has %d rows in registry, want 1", name, n)
		}
	}
	for c := range rows {
		if _, ok := consts[string(c)]; !ok {
			t.Errorf("registry row %s has no constant", c)
		}
	}
}

// docTableHeader starts the class table in docs/report.md.
const docTableHeader = "| class | means | what to check |\n|---|---|---|\n"

// docTable is docs/report.md's class table as the registry makes it.
func docTable() string {
	var b strings.Builder
	b.WriteString(docTableHeader)
	for _, r := range Infos() {
		b.WriteString("| `" + string(r.Class) + "` | " + r.Means + " | " + r.Check + " |\n")
	}
	return b.String()
}

// TestDocTable: the error class table in docs/report.md is the registry's
// (go test ./pkg/errclass -run TestDocTable -update rewrites it).
func TestDocTable(t *testing.T) {
	doctable.Check(t, doctable.Table{
		Path:       filepath.Join("..", "..", "docs", "report.md"),
		Begin:      docTableHeader,
		Regenerate: "go test ./pkg/errclass -run TestDocTable -update",
	}, docTable(), *update)
}
