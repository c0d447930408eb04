package fences

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestEveryRegexpLiteralCompiles compiles every constant pattern given to
// regexp.MustCompile in the module's non-test Go files. Most are built on
// first use (sync.OnceValue, docs/design.md "Memory"), so a bad one no
// longer panics at every start, where any test saw it: it would panic in
// the middle of the one command, perhaps a host change, that first needs
// it, and no test may reach that path. This reads them from the source
// instead, whichever path uses them. A pattern built at run time (not a
// string constant) must be compiled by its package's tests.
func TestEveryRegexpLiteralCompiles(t *testing.T) {
	fset := token.NewFileSet()
	seen := 0
	for _, dir := range []string{"cmd", "pkg", "internal"} {
		err := filepath.WalkDir(filepath.Join("../..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 || !isSelector(call.Fun, "regexp", "MustCompile") {
					return true
				}
				pattern, ok := stringConstant(call.Args[0])
				if !ok {
					return true
				}
				seen++
				if _, err := regexp.Compile(pattern); err != nil {
					t.Errorf("%s: regexp.MustCompile would panic on first use: %v", fset.Position(call.Pos()), err)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d constant patterns checked", seen)
	// 77 in December 2026, the validation package's about 30: fewer
	// means the walk or the matching broke, and the check would prove
	// nothing.
	if seen < 60 {
		t.Fatalf("found %d constant patterns, want the module's (more than 60)", seen)
	}
}

// isSelector says whether e is pkg.name.
func isSelector(e ast.Expr, pkg, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != name {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// stringConstant is the value of e when e is a string literal or a sum
// of them ("a" + `b`, over lines); ok is false for anything else.
func stringConstant(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok := stringConstant(e.X)
		if !ok {
			return "", false
		}
		y, ok := stringConstant(e.Y)
		return x + y, ok
	case *ast.ParenExpr:
		return stringConstant(e.X)
	}
	return "", false
}
