package spec

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	// sigs.k8s.io/json reports strict problems as `unknown field "a.b[0].c"`
	// and `duplicate field "a.b"`.
	strictRE = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)
	// and type mismatches as `json: cannot unmarshal V into Go struct field
	// S.a.b of type T`.
	typeRE = regexp.MustCompile(`^json: cannot unmarshal (.+) into Go struct field [A-Za-z0-9_]+\.(\S+) of type (.+)$`)
)

// strictError turns one strict-decoding problem into a field error with
// the offending field's path.
func strictError(err error) *field.Error {
	m := strictRE.FindStringSubmatch(err.Error())
	if m == nil {
		return field.Invalid(nil, "", err.Error())
	}
	p := parsePath(m[2])
	if m[1] == "duplicate" {
		return field.Duplicate(p, "")
	}
	return &field.Error{Type: field.ErrorTypeInvalid, Field: p.String(), BadValue: field.OmitValueType{}, Detail: "unknown field (misspelled, or not part of this apiVersion)"}
}

// typeError turns a decoding failure into a field error; a type mismatch
// names the field's path and the expected type. It also returns the
// dotted path of a mismatched field ("" for other failures).
func typeError(err error) (*field.Error, string) {
	m := typeRE.FindStringSubmatch(err.Error())
	if m == nil {
		return field.Invalid(nil, "", err.Error()), ""
	}
	return &field.Error{Type: field.ErrorTypeTypeInvalid, Field: parsePath(m[2]).String(), BadValue: field.OmitValueType{}, Detail: "got " + m[1] + ", want " + goTypeName(m[3])}, m[2]
}

// deletePath removes the value at a dotted path ("a.b.c") from a decoded
// JSON tree. The decoder's paths carry no list indices, so a list met on
// the way is searched in every element. It reports whether something was
// removed.
func deletePath(tree any, dotted string) bool {
	return deleteParts(tree, strings.Split(dotted, "."))
}

func deleteParts(cur any, parts []string) bool {
	switch v := cur.(type) {
	case []any:
		removed := false
		for _, el := range v {
			removed = deleteParts(el, parts) || removed
		}
		return removed
	case map[string]any:
		name, _, _ := strings.Cut(parts[0], "[")
		if len(parts) == 1 {
			_, found := v[name]
			delete(v, name)
			return found
		}
		return deleteParts(v[name], parts[1:])
	}
	return false
}

// parsePath converts a dotted path such as "spec.host.files[0].mode" into a
// field.Path.
func parsePath(s string) *field.Path {
	var p *field.Path
	for _, part := range strings.Split(s, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if p == nil {
			p = field.NewPath(name)
		} else {
			p = p.Child(name)
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			p = p.Key(idx)
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return p
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "integer"
	case t == "bool":
		return "boolean"
	case t == "string" || strings.HasSuffix(t, ".Role") || strings.HasSuffix(t, ".Action"):
		return "string"
	case strings.HasPrefix(t, "[]"):
		return "list"
	case strings.HasPrefix(t, "map["):
		return "mapping"
	}
	return "object"
}
