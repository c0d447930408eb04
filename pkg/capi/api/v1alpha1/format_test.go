package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/render"
)

// TestFormatEnumIsTheRegistrys: the kubebuilder enum of Format (and so the
// CRD's spec.format) lists exactly the formats pkg/render's registry marks
// as offered through Cluster API, in registry order, and each has a Format
// constant here. A format added to the provider is marked in
// pkg/render/formats.go, then the marker and constant follow.
func TestFormatEnumIsTheRegistrys(t *testing.T) {
	var want []string
	for _, f := range render.FormatInfos() {
		if f.ClusterAPI {
			want = append(want, string(f.Format))
		}
	}
	if len(want) == 0 {
		t.Fatal("the registry offers no format through Cluster API")
	}

	f, err := parser.ParseFile(token.NewFileSet(), "machineadmconfig_types.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var enum []string
	consts := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.Name != "Format" || g.Doc == nil {
					continue
				}
				for _, c := range g.Doc.List {
					if v, ok := strings.CutPrefix(c.Text, "// +kubebuilder:validation:Enum="); ok {
						enum = strings.Split(v, ";")
					}
				}
			case *ast.ValueSpec:
				if id, ok := s.Type.(*ast.Ident); ok && id.Name == "Format" {
					for i := range s.Names {
						v, err := strconv.Unquote(s.Values[i].(*ast.BasicLit).Value)
						if err != nil {
							t.Fatal(err)
						}
						consts[v] = true
					}
				}
			}
		}
	}
	if !slices.Equal(enum, want) {
		t.Errorf("Format's +kubebuilder:validation:Enum is %q; pkg/render's registry offers %q through Cluster API (make capi-manifests after changing the marker)", enum, want)
	}
	for _, w := range want {
		if !consts[w] {
			t.Errorf("no Format constant for %q", w)
		}
	}
	for c := range consts {
		if !slices.Contains(want, c) {
			t.Errorf("Format constant %q is not offered through Cluster API in pkg/render's registry", c)
		}
	}
}
