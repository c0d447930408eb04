package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"
)

// reflectSchema builds the JSON Schema of r.Type: strict (no properties
// beyond the Go fields), with required properties taken from JSON tags
// without omitempty, descriptions from the Go doc comments, enums from
// typed string constants, and r.Consts pinned.
func reflectSchema(r root) (*jsonschema.Schema, error) {
	pkgs := modulePackages(r.Type)
	enums, err := typedStringConsts(pkgs)
	if err != nil {
		return nil, err
	}
	ref := &jsonschema.Reflector{
		Anonymous:      true, // no $id: the schema is a file in this repository, not a hosted URL
		ExpandedStruct: true, // the root type at the top, not behind a $ref
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if vals, ok := enums[t.PkgPath()+"."+t.Name()]; ok && t.Kind() == reflect.String {
				s := &jsonschema.Schema{Type: "string"}
				for _, v := range vals {
					s.Enum = append(s.Enum, v)
				}
				return s
			}
			return nil
		},
	}
	for _, p := range pkgs {
		if err := ref.AddGoComments(module, strings.TrimPrefix(p, module+"/"), jsonschema.WithFullComment()); err != nil {
			return nil, fmt.Errorf("reading doc comments of %s: %w", p, err)
		}
	}
	for k, v := range ref.CommentMap {
		ref.CommentMap[k] = reflow(v)
	}
	s := ref.ReflectFromType(r.Type)
	s.Title = r.Type.Name()
	if v, k := r.Consts["apiVersion"], r.Consts["kind"]; v != "" && k != "" {
		s.Title = k + " (" + v + ")"
	}
	for name, val := range r.Consts {
		prop, ok := s.Properties.Get(name)
		if !ok {
			return nil, fmt.Errorf("const for %q: no such property", name)
		}
		prop.Const = val
	}
	return s, nil
}

func marshalSchema(s *jsonschema.Schema) ([]byte, error) {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// reflow joins the lines of each paragraph of a doc comment into one line,
// keeping blank lines between paragraphs.
func reflow(s string) string {
	paras := strings.Split(strings.TrimSpace(s), "\n\n")
	for i, p := range paras {
		paras[i] = strings.Join(strings.Fields(p), " ")
	}
	return strings.Join(paras, "\n\n")
}

// modulePackages lists the packages of this module whose types are
// reachable from t, sorted.
func modulePackages(t reflect.Type) []string {
	seen := map[reflect.Type]bool{}
	pkgs := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		if strings.HasPrefix(t.PkgPath(), module+"/") {
			pkgs[t.PkgPath()] = true
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(t.Elem())
		case reflect.Map:
			walk(t.Key())
			walk(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				walk(t.Field(i).Type)
			}
		}
	}
	walk(t)
	out := make([]string, 0, len(pkgs))
	for p := range pkgs {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// typedStringConsts returns, for each named type ("pkgpath.Name") of the
// given packages, the string literals of the constants declared with that
// type, in source order. A type with a constant whose value is not a
// string literal is left out: a partial list must not become an enum.
func typedStringConsts(pkgs []string) (map[string][]string, error) {
	out := map[string][]string{}
	bad := map[string]bool{}
	for _, pkg := range pkgs {
		fset := token.NewFileSet()
		dir := strings.TrimPrefix(pkg, module+"/")
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", dir, err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", dir, err)
			}
			collectConsts(f, pkg, out, bad)
		}
	}
	for k := range bad {
		delete(out, k)
	}
	return out, nil
}

func collectConsts(f *ast.File, pkg string, out map[string][]string, bad map[string]bool) {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			id, ok := vs.Type.(*ast.Ident)
			if !ok {
				continue
			}
			key := pkg + "." + id.Name
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					bad[key] = true
					continue
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					bad[key] = true
					continue
				}
				out[key] = append(out[key], s)
			}
		}
	}
}
