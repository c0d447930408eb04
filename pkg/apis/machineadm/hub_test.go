package machineadm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// latestDir is the source directory of the version the hub aliases; it
// changes together with the import in types.go.
var latestDir = LatestVersion

// hubNames maps a name of the latest version's package to the name the
// hub gives it, where the two differ.
var hubNames = map[string]string{"Version": "LatestVersion", "APIVersion": "LatestAPIVersion"}

// TestHubAliasesEveryName parses the latest version's package and the
// hub's types.go, and expects every exported top-level name of the
// former (types, constants, functions) to be declared in the hub as that
// very name of package latest: a type alias (=), a constant or a
// forwarding function. So a field or type added to the newest version is
// in the hub at once (the hub is the same type), and a new type or value
// the hub forgot fails here.
func TestHubAliasesEveryName(t *testing.T) {
	want := exportedNames(t, latestDir)
	if len(want) < 30 {
		t.Fatalf("found only %d names in %s; is latestDir right?", len(want), latestDir)
	}
	got := hubAliases(t)
	var missing []string
	for _, name := range want {
		hub := name
		if h, ok := hubNames[name]; ok {
			hub = h
		}
		if got[hub] != name {
			missing = append(missing, name+" (as "+hub+")")
		}
	}
	if len(missing) > 0 {
		t.Errorf("pkg/apis/machineadm/types.go lacks aliases of %s names:\n  %s", latestDir, strings.Join(missing, "\n  "))
	}
}

// TestHubTypesAreTheLatestTypes: the hub's types are identical to the
// latest version's (aliases, not copies), so a spec decoded as the latest
// version is a hub spec without conversion.
func TestHubTypesAreTheLatestTypes(t *testing.T) {
	root := reflect.TypeFor[MachineBootstrapConfig]()
	if got := root.PkgPath(); !strings.HasSuffix(got, "/"+latestDir) {
		t.Errorf("hub MachineBootstrapConfig is declared in %s, want the %s package", got, latestDir)
	}
}

// exportedNames returns the exported top-level names declared in the
// non-test Go files of dir.
func exportedNames(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, d := range parse(t, f).Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() && !deprecated(d.Doc) {
					out = append(out, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							out = append(out, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								out = append(out, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// deprecated reports a doc comment with a "Deprecated:" paragraph: such a
// function is on its way out and gets no hub name.
func deprecated(doc *ast.CommentGroup) bool {
	return doc != nil && strings.Contains(doc.Text(), "\nDeprecated: ")
}

// hubAliases maps each name declared in types.go to the name of package
// latest it refers to: `X = latest.Y` for types and constants, a function
// whose body calls latest.Y.
func hubAliases(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	ref := func(e ast.Expr) string {
		if sel, ok := e.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "latest" {
				return sel.Sel.Name
			}
		}
		return ""
	}
	for _, d := range parse(t, "types.go").Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			ast.Inspect(d.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok && ref(c.Fun) != "" {
					out[d.Name.Name] = ref(c.Fun)
				}
				return true
			})
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Assign.IsValid() {
						out[s.Name.Name] = ref(s.Type)
					}
				case *ast.ValueSpec:
					for i, n := range s.Names {
						if i < len(s.Values) {
							out[n.Name] = ref(s.Values[i])
						}
					}
				}
			}
		}
	}
	return out
}

func parse(t *testing.T, path string) *ast.File {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
