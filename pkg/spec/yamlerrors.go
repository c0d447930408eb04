package spec

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The YAML-to-JSON conversion (sigs.k8s.io/yaml over go.yaml.in/yaml/v2)
// quotes values of the document in some of its errors; a value may be a
// secret (a certificate key written with a wrong tag). These patterns
// find every such message; their replacements keep what went wrong and
// drop the value.
var (
	// `cannot decode !!str `VALUE` as a !!int`: a value whose explicit tag
	// does not fit it. Group 1 is the value, group 2 the tag.
	badTagRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)cannot decode !!\\w+ `(.*)` as a (!!\\w+)") })
	// `unknown anchor 'NAME' referenced`, `anchor 'NAME' value contains itself`.
	unknownAnchorRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`unknown anchor '.*' referenced`) })
	selfAnchorRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`anchor '.*' value contains itself`) })
	// `invalid map key: map[interface {}]interface {}{...}` (yaml.v2) and
	// `unsupported map key of type: T, key: K, value: V` (sigs.k8s.io/yaml).
	invalidKeyRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)invalid map key: .*`) })
	unsupportedKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)unsupported map key of type: .*`) })
	// Anything else between backquotes, as in yaml.v2's
	// `line 3: cannot unmarshal !!str `VALUE` into int`.
	backquotedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`[^`]*`") })
)

// scrubConverterMessage rewrites an error message of the YAML-to-JSON
// conversion so that it quotes no value, key or anchor name of the
// document. Messages without any (syntax errors with their line) are kept.
func scrubConverterMessage(msg string) string {
	msg = badTagRE().ReplaceAllString(msg, "a value tagged $2 is not a valid $2 (the value is not shown)")
	msg = unknownAnchorRE().ReplaceAllString(msg, "an alias refers to an anchor that is not defined (its name is not shown)")
	msg = selfAnchorRE().ReplaceAllString(msg, "an anchor's value contains an alias to itself (its name is not shown)")
	msg = invalidKeyRE().ReplaceAllString(msg, "a mapping or list is used as a mapping key")
	msg = unsupportedKeyRE().ReplaceAllString(msg, "a mapping key of an unsupported type")
	return backquotedRE().ReplaceAllString(msg, "(value not shown)")
}

// conversionError turns a failed YAML-to-JSON conversion of data into one
// field error that never quotes the document's values. A value whose tag
// does not fit it is reported at its field path and line; anything else
// is an error of the whole document.
func conversionError(err error, data []byte) *field.Error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	if m := badTagRE().FindStringSubmatch(msg); m != nil {
		if p, line, ok := findTagged(data, m[2], m[1]); ok {
			return &field.Error{Type: field.ErrorTypeInvalid, Field: p.String(), BadValue: field.OmitValueType{},
				Detail: fmt.Sprintf("line %d: tagged %s but not a valid %s; the value is not shown (remove the tag or fix the value)", line, m[2], m[2])}
		}
	}
	return docError("not a YAML or JSON document: " + scrubConverterMessage(msg))
}

// findTagged locates the scalar of data that carries the explicit tag and
// has the given value, and returns its field path and line. Map keys are
// written as "[key]" for map fields of the document's apiVersion, when
// that is known.
func findTagged(data []byte, tag, value string) (*field.Path, int, bool) {
	var doc yaml.Node
	if yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc) != nil || len(doc.Content) != 1 {
		return nil, 0, false
	}
	root := doc.Content[0]
	var rt reflect.Type
	if root.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "apiVersion" {
				rt = versions[root.Content[i+1].Value].root
			}
		}
	}
	return walkTagged(root, rt, nil, tag, value)
}

// walkTagged searches n (of Go type t, nil when unknown) depth first.
func walkTagged(n *yaml.Node, t reflect.Type, p *field.Path, tag, value string) (*field.Path, int, bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Style&yaml.TaggedStyle != 0 && n.Tag == tag && n.Value == value && p != nil {
			return p, n.Line, true
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp, vt := entryOf(p, t, k.Value)
			if fp, line, ok := walkTagged(v, vt, kp, tag, value); ok {
				return fp, line, true
			}
		}
	case yaml.SequenceNode:
		et := elemOf(t)
		for i, el := range n.Content {
			if fp, line, ok := walkTagged(el, et, indexPath(p, i), tag, value); ok {
				return fp, line, true
			}
		}
	}
	return nil, 0, false
}
