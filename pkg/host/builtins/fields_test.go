package builtins_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	capiv1alpha1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/host"
)

// hostRoot is where the host section sits in both documents.
const hostRoot = "spec.host"

// excludedHostFields are fields of spec.host that no host concern owns,
// each with the reason; a path excludes everything below it. Empty today:
// every field has an owner.
var excludedHostFields = map[string]string{}

// TestEveryHostFieldHasAnOwner is the fence that every field of the
// machine spec's spec.host (the hub types), and of the Cluster API
// MachineadmConfig's spec.host, is owned by a registered host concern
// (host.Concern.Fields) or excluded above with a reason: a new field with
// no concern to act on it fails here instead of being silently ignored.
func TestEveryHostFieldHasAnOwner(t *testing.T) {
	owned := ownedHostFields(t)
	for _, doc := range []struct {
		name string
		typ  reflect.Type
	}{
		{"machine spec (pkg/apis/machineadm)", reflect.TypeFor[machineadm.Host]()},
		{"Cluster API MachineadmConfig (pkg/capi/api/v1alpha1)", reflect.TypeFor[capiv1alpha1.HostSpec]()},
	} {
		for _, p := range unowned(jsonPaths(doc.typ, hostRoot), owned) {
			t.Errorf("%s: %s is owned by no host concern: add it to the Fields of the concern that acts on it (host.Register), or to excludedHostFields with the reason", doc.name, p)
		}
	}
}

// TestHostFieldClaimsExist: every owned or excluded path names a field of
// the machine spec or of the Cluster API types, so a renamed field cannot
// leave a stale claim behind that would hide it.
func TestHostFieldClaimsExist(t *testing.T) {
	all := map[string]bool{}
	for _, typ := range []reflect.Type{reflect.TypeFor[machineadm.Host](), reflect.TypeFor[capiv1alpha1.HostSpec]()} {
		for _, p := range jsonPaths(typ, hostRoot) {
			all[p] = true
		}
	}
	check := func(what, p string) {
		if !all[p] {
			t.Errorf("%s claims %s, which is no field of spec.host", what, p)
		}
	}
	for _, c := range host.Concerns() {
		for _, f := range c.Fields {
			check("host concern "+c.Name, f)
		}
	}
	for p := range excludedHostFields {
		check("excludedHostFields", p)
	}
}

// TestFieldFenceCatchesAnUnownedField: the walk sees a field no concern
// owns, at any depth, and a claim on a parent covers its children.
func TestFieldFenceCatchesAnUnownedField(t *testing.T) {
	type inner struct {
		A string `json:"a"`
		B string `json:"b,omitempty"`
	}
	type section struct {
		Owned   inner            `json:"owned"`
		Partial *inner           `json:"partial,omitempty"`
		List    []inner          `json:"list"`
		Map     map[string]inner `json:"map"`
		Skipped string           `json:"-"`
	}
	got := unowned(jsonPaths(reflect.TypeFor[section](), "spec.host"), []string{"spec.host.owned", "spec.host.partial.a", "spec.host.map"})
	want := []string{"spec.host.partial.b", "spec.host.list.a", "spec.host.list.b"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("unowned = %q, want %q", got, want)
	}
}

// ownedHostFields are the paths the registered concerns own, plus the
// excluded ones.
func ownedHostFields(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, c := range host.Concerns() {
		out = append(out, c.Fields...)
	}
	if len(out) == 0 {
		t.Fatal("no host concern owns any field: are the concerns registered?")
	}
	for p := range excludedHostFields {
		out = append(out, p)
	}
	return out
}

// unowned returns the leaf paths (a parent is owned when all its
// children are) neither in owned nor below one of them.
func unowned(paths, owned []string) []string {
	var out []string
	for i, p := range paths {
		if i+1 < len(paths) && strings.HasPrefix(paths[i+1], p+".") {
			continue // a parent: its children are checked
		}
		ok := false
		for _, o := range owned {
			if p == o || strings.HasPrefix(p, o+".") {
				ok = true
				break
			}
		}
		if !ok {
			out = append(out, p)
		}
	}
	return out
}

// jsonPaths lists the json paths of every field below typ, depth first,
// parents before children, under prefix: names joined with ".", list
// items and map values without index or key. It descends into structs
// of typ's own package; fields of other packages' types (Kubernetes API
// types, JSON blobs) are leaves.
func jsonPaths(typ reflect.Type, prefix string) []string {
	var out []string
	var walk func(t reflect.Type, prefix string, seen map[reflect.Type]bool)
	walk = func(t reflect.Type, prefix string, seen map[reflect.Type]bool) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t.PkgPath() != typ.PkgPath() || seen[t] {
			return
		}
		seen[t] = true
		defer delete(seen, t)
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
				continue
			case name == "" && f.Anonymous:
				walk(f.Type, prefix, seen) // embedded: its fields are inline
				continue
			case name == "":
				name = f.Name
			}
			p := prefix + "." + name
			out = append(out, p)
			walk(f.Type, p, seen)
		}
	}
	walk(typ, prefix, map[reflect.Type]bool{})
	return out
}
