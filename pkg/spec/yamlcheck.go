package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkYAML finds what the YAML-to-JSON step would either refuse without a
// field path or silently drop: keys given twice in one mapping (reported
// with the key's path and both line numbers), more than one document in
// the input (later documents would be ignored), YAML merge keys ("<<",
// see checkMerge), and explicit tags other
// than the YAML core schema's (a "!vault" or "!!binary" tag was dropped
// and its value taken as plain text; see coreTags). root is the Go type of
// the document, used to write map keys as "[key]" in paths; nil when the
// apiVersion is unknown. It returns no errors for input it cannot parse;
// the JSON conversion reports syntax errors.
func checkYAML(data []byte, root reflect.Type) field.ErrorList {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var errs field.ErrorList
	docs := 0
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errs
		}
		if isEmptyDocument(&n) {
			continue
		}
		docs++
		if docs == 1 && len(n.Content) == 1 {
			checkTag(n.Content[0], nil, &errs)
			duplicateKeys(n.Content[0], root, nil, &errs)
		}
	}
	if docs > 1 {
		errs = append(errs, docError(fmt.Sprintf("holds %d YAML documents; a spec file holds exactly one (remove the extra \"---\" sections)", docs)))
	}
	return errs
}

func isEmptyDocument(n *yaml.Node) bool {
	if len(n.Content) == 0 {
		return true
	}
	c := n.Content[0]
	return c.Kind == yaml.ScalarNode && c.Tag == "!!null"
}

// coreTags are the tags of the YAML 1.2 core schema, the only ones a spec
// may spell out: the conversion to JSON knows what they mean. (The
// non-specific "!" only says "a string" and is read as !!str.) Any other
// tag, local ("!vault") or global ("!!binary", "!!timestamp"), would
// be dropped and its value read as the plain scalar: a secret reference
// such as `token: !vault secret/x` became the literal token
// "secret/x".
var coreTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true, "!!map": true, "!!seq": true}

// checkTag reports a node at p (a key's own path for a key) that carries
// an explicit tag outside coreTags.
func checkTag(n *yaml.Node, p *field.Path, errs *field.ErrorList) {
	if n.Style&yaml.TaggedStyle == 0 || coreTags[n.Tag] {
		return
	}
	e := docError(fmt.Sprintf("YAML tag %q (line %d) is not supported: machineadm reads plain YAML, whose core tags (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq) are the only ones allowed; give the value itself, or a secret through a file (token: {file: PATH}) or `machineadm seal`", n.Tag, n.Line))
	if p != nil {
		e.Field = p.String()
	}
	*errs = append(*errs, e)
}

// checkMerge reports a merge key ("<<: *anchor", tag !!merge) in the
// mapping at p and says whether k was one. The conversion to JSON applies
// a merged key over one the mapping itself gives, against YAML's rule
// that the mapping's own keys win, and without a "key given twice": a
// spec reading "name: w1" next to "<<: {name: w2}" named its node w2. A
// spec is plain YAML: each key is written out where it applies.
func checkMerge(k *yaml.Node, p *field.Path, errs *field.ErrorList) bool {
	if k.Kind != yaml.ScalarNode || k.Tag != "!!merge" {
		return false
	}
	e := docError(fmt.Sprintf("YAML merge key %q (line %d) is not supported: machineadm reads plain YAML; write the keys out in this mapping", k.Value, k.Line))
	if p != nil {
		e.Field = p.String()
	}
	*errs = append(*errs, e)
	return true
}

// duplicateKeys walks a YAML node tree beside its Go type t (nil when
// unknown) and reports every mapping key that appears twice, by path,
// and every node with a tag outside coreTags (checkTag).
func duplicateKeys(n *yaml.Node, t reflect.Type, p *field.Path, errs *field.ErrorList) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.MappingNode:
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp, vt := entryOf(p, t, k.Value)
			if checkMerge(k, p, errs) {
				continue
			}
			checkTag(k, kp, errs)
			checkTag(v, kp, errs)
			if line, seen := first[k.Value]; seen {
				*errs = append(*errs, &field.Error{Type: field.ErrorTypeDuplicate, Field: kp.String(), BadValue: field.OmitValueType{},
					Detail: fmt.Sprintf("key given twice (lines %d and %d)", line, k.Line)})
				continue
			}
			first[k.Value] = k.Line
			duplicateKeys(v, vt, kp, errs)
		}
	case yaml.SequenceNode:
		et := elemOf(t)
		for i, el := range n.Content {
			checkTag(el, indexPath(p, i), errs)
			duplicateKeys(el, et, indexPath(p, i), errs)
		}
	}
}

// entryOf returns the path and Go type (nil when unknown) of the value
// under key in a mapping at p whose Go type is t: a map key, or the JSON
// field of a struct.
func entryOf(p *field.Path, t reflect.Type, key string) (*field.Path, reflect.Type) {
	if t != nil && t.Kind() == reflect.Map {
		return keyPath(p, key), t.Elem()
	}
	return childPath(p, key), jsonFieldType(t, key)
}

// elemOf returns the element type of a list type t (nil when unknown).
func elemOf(t reflect.Type) reflect.Type {
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		return t.Elem()
	}
	return nil
}

// jsonFieldType returns the type of the struct field that JSON name maps
// to, looking into inlined (embedded) structs; nil when there is none.
func jsonFieldType(t reflect.Type, name string) reflect.Type {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name {
			return f.Type
		}
		if tag == "" && f.Anonymous {
			if ft := jsonFieldType(f.Type, name); ft != nil {
				return ft
			}
		}
	}
	return nil
}

// childPath and indexPath extend p, which is nil at the document root.
func childPath(p *field.Path, name string) *field.Path {
	if p == nil {
		return field.NewPath(name)
	}
	return p.Child(name)
}

func keyPath(p *field.Path, key string) *field.Path {
	if p == nil {
		return field.NewPath("").Key(key)
	}
	return p.Key(key)
}

func indexPath(p *field.Path, i int) *field.Path {
	if p == nil {
		return field.NewPath("").Index(i)
	}
	return p.Index(i)
}
