package render

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/doctable"
)

// TestFormatRegistryHasEveryConstant: every Format constant has exactly one
// complete row in the registry, and every row a constant.
func TestFormatRegistryHasEveryConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "formats.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[Format]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Format" {
				continue
			}
			for i := range vs.Names {
				v, err := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				consts[Format(v)] = true
			}
		}
	}
	if len(consts) < 5 {
		t.Fatalf("found only %d Format constants in formats.go; the parse is wrong", len(consts))
	}
	rows := map[Format]int{}
	for _, r := range FormatInfos() {
		rows[r.Format]++
		if r.OS != Linux && r.OS != Windows {
			t.Errorf("format %s: OS %q", r.Format, r.OS)
		}
		if r.Help == "" || r.For == "" || r.Doc == "" || r.render == nil {
			t.Errorf("format %s: help, for, doc and renderer are all required", r.Format)
		}
		if strings.ContainsAny(r.For+r.Doc, "|\n") {
			t.Errorf("format %s: for and doc are Markdown table cells: no | or newline", r.Format)
		}
		if !consts[r.Format] {
			t.Errorf("registry row %s has no Format constant", r.Format)
		}
	}
	for c := range consts {
		if rows[c] != 1 {
			t.Errorf("format constant %q has %d rows in the registry, want 1", c, rows[c])
		}
	}
}

// formatsDocHeader starts the format table in docs/render.md.
const formatsDocHeader = "| `--format` | OS | for | what it is |\n|---|---|---|---|\n"

// TestFormatsDocTable: the format table in docs/render.md is the
// registry's (go test ./pkg/render -run TestFormatsDocTable -update
// rewrites it).
func TestFormatsDocTable(t *testing.T) {
	var b strings.Builder
	b.WriteString(formatsDocHeader)
	for _, r := range FormatInfos() {
		b.WriteString("| `" + string(r.Format) + "` | " + string(r.OS) + " | " + r.For + " | " + r.Doc + " |\n")
	}
	doctable.Check(t, doctable.Table{
		Path:       filepath.Join(repoRoot(t), "docs", "render.md"),
		Begin:      formatsDocHeader,
		Regenerate: "go test ./pkg/render -run TestFormatsDocTable -update",
	}, b.String(), *update)
}
