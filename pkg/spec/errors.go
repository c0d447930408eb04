package spec

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
)

var (
	// sigs.k8s.io/json reports strict problems as `unknown field "a.b[0].c"`
	// and `duplicate field "a.b"`.
	strictRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`) })
	// and type mismatches as `json: cannot unmarshal V into Go struct field
	// S.a.b of type T`, where a.b is the JSON path without list indices or
	// map keys.
	typeRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^json: cannot unmarshal (.+) into Go struct field [A-Za-z0-9_]+\.(\S+) of type (.+)$`)
	})
)

// docError is a problem of the whole document; it has no field path.
func docError(detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeInvalid, BadValue: field.OmitValueType{}, Detail: detail}
}

// strictError turns one strict-decoding problem into a field error with
// the offending field's path.
func strictError(err error) *field.Error {
	m := strictRE().FindStringSubmatch(err.Error())
	if m == nil {
		return docError(err.Error())
	}
	p := parsePath(m[2])
	if m[1] == "duplicate" {
		return &field.Error{Type: field.ErrorTypeDuplicate, Field: p.String(), BadValue: field.OmitValueType{}, Detail: "key given twice"}
	}
	return &field.Error{Type: field.ErrorTypeInvalid, Field: p.String(), BadValue: field.OmitValueType{}, Detail: "unknown field (misspelled, or not part of this apiVersion)"}
}

// typeMismatch is a decoder type error taken apart.
type typeMismatch struct {
	// got is the JSON kind of the value: string, number, bool, array or
	// object.
	got string
	// dotted is the JSON path without indices or keys ("a.b.c").
	dotted string
	// want names the expected type for people ("integer", "list", …).
	want string
}

// parseTypeError recognises a decoder type error; ok is false for any
// other failure.
func parseTypeError(err error) (tm typeMismatch, ok bool) {
	m := typeRE().FindStringSubmatch(err.Error())
	if m == nil {
		return tm, false
	}
	got, _, _ := strings.Cut(m[1], " ") // "number 1.5" -> "number"
	return typeMismatch{got: got, dotted: m[2], want: goTypeName(m[3])}, true
}

func (tm typeMismatch) error(p *field.Path) *field.Error {
	return &field.Error{Type: field.ErrorTypeTypeInvalid, Field: p.String(), BadValue: field.OmitValueType{}, Detail: "got " + tm.got + ", want " + tm.want}
}

// prune removes from a decoded JSON tree every value at the mismatch's
// path whose JSON kind is the mismatched one, and returns the exact paths
// (with list indices and map keys) of what it removed. The decoder names
// a path without indices, so every list element on the way is searched;
// the mismatched value may also be an item of a list or a value of a map
// at that path. drop asks the caller to delete cur itself.
func prune(cur any, parts []string, got string, p *field.Path) (drop bool, found []*field.Path) {
	if len(parts) == 0 {
		if jsonKind(cur) == got {
			return true, []*field.Path{p}
		}
		switch v := cur.(type) {
		case []any:
			// The parent replaces the list by its other items (removeKind).
			for i, el := range v {
				if jsonKind(el) == got {
					found = append(found, indexPath(p, i))
				}
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if jsonKind(v[k]) == got {
					delete(v, k)
					found = append(found, keyPath(p, k))
				}
			}
		}
		return false, found
	}
	switch v := cur.(type) {
	case []any:
		for i := range v {
			_, f := prune(v[i], parts, got, indexPath(p, i))
			found = append(found, f...)
		}
	case map[string]any:
		child, ok := v[parts[0]]
		if !ok {
			return false, nil
		}
		d, f := prune(child, parts[1:], got, childPath(p, parts[0]))
		if d {
			delete(v, parts[0])
		} else if l, isList := child.([]any); isList && len(parts) == 1 {
			v[parts[0]] = removeKind(l, got)
		}
		found = append(found, f...)
	}
	return false, found
}

// removeKind returns the items of l that are not of JSON kind got.
func removeKind(l []any, got string) []any {
	out := make([]any, 0, len(l))
	for _, el := range l {
		if jsonKind(el) != got {
			out = append(out, el)
		}
	}
	return out
}

// jsonKind names the JSON kind of a value decoded by encoding/json into
// an any, as the decoder's type errors do.
func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// parsePath converts a dotted path such as "spec.host.files[0].mode" into a
// field.Path.
func parsePath(s string) *field.Path { return validation.DottedPath(nil, s) }

// goTypeName names a Go type of the spec for people.
func goTypeName(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "integer"
	case strings.HasPrefix(t, "float"):
		return "number"
	case t == "bool":
		return "boolean"
	case t == "string" || strings.HasSuffix(t, ".Role") || strings.HasSuffix(t, ".Action"):
		return "string"
	case strings.HasPrefix(t, "[]"):
		return "list"
	case strings.HasPrefix(t, "map["):
		return "mapping"
	}
	return "mapping (object)"
}
