package validation

import (
	"encoding/json"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
)

// kubeletDecodeProblem is one value of a partial KubeletConfiguration
// that the kubelet's decoder refuses: its path and the decoder's error.
type kubeletDecodeProblem struct {
	path *field.Path
	t    reflect.Type // the Go type the value decodes into
	err  error
}

// kubeletDecodeProblems finds every value of cfg (spec.node.kubelet.config,
// at path p) that decoding into kubelet.config.k8s.io/v1beta1
// KubeletConfiguration refuses: a mistyped value, a duration
// time.ParseDuration cannot read ("1h1000000000h", "5 min"), a quantity
// resource.ParseQuantity cannot read. The decoder stops at the first and
// names no path for the last two, so each top-level field is decoded
// alone and a failing one narrowed, by the Go type it decodes into, to the
// deepest struct field, map entry or list element that fails alone (a
// value that fails only together with others is reported where the
// narrowing stops). Decoding cost is linear in the size of cfg times its
// depth. err is the error of decoding cfg as a whole: when no field fails
// alone, it is the one problem, at p.
func kubeletDecodeProblems(cfg map[string]any, p *field.Path, err error) []kubeletDecodeProblem {
	return narrowKubeletDecode(p, reflect.TypeFor[kubeletv1beta1.KubeletConfiguration](), cfg, func(v any) any { return v }, err)
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	durationType        = reflect.TypeFor[metav1.Duration]()
	logDurationType     = reflect.TypeFor[logsapi.TimeOrMetaDuration]()
	quantityType        = reflect.TypeFor[resource.Quantity]()
	quantityValueType   = reflect.TypeFor[resource.QuantityValue]()
)

// narrowKubeletDecode returns the problems below v (of Go type t, at p):
// each child (struct field, map entry, list element) that fails to decode
// alone, wrapped back into a whole configuration by wrap, narrowed
// further; or v itself with err when no child fails alone.
func narrowKubeletDecode(p *field.Path, t reflect.Type, v any, wrap func(any) any, err error) []kubeletDecodeProblem {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []kubeletDecodeProblem
	try := func(cp *field.Path, ct reflect.Type, cv any, cwrap func(any) any) {
		if cerr := decodeKubeletConfig(cwrap(cv)); cerr != nil {
			out = append(out, narrowKubeletDecode(cp, ct, cv, cwrap, cerr)...)
		}
	}
	// A type that decodes itself (a duration, a quantity) is a leaf.
	if !reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		switch t.Kind() {
		case reflect.Struct:
			if m, ok := v.(map[string]any); ok {
				for _, k := range sortedKeys(m) {
					if ft, ok := jsonFieldType(t, k); ok {
						try(p.Child(k), ft, m[k], func(c any) any { return wrap(map[string]any{k: c}) })
					}
				}
			}
		case reflect.Map:
			if m, ok := v.(map[string]any); ok {
				for _, k := range sortedKeys(m) {
					try(p.Key(k), t.Elem(), m[k], func(c any) any { return wrap(map[string]any{k: c}) })
				}
			}
		case reflect.Slice:
			if l, ok := v.([]any); ok {
				for i, e := range l {
					try(p.Index(i), t.Elem(), e, func(c any) any { return wrap([]any{c}) })
				}
			}
		}
	}
	if len(out) == 0 && err != nil {
		out = append(out, kubeletDecodeProblem{path: p, t: t, err: err})
	}
	return out
}

// decodeKubeletConfig decodes v (a whole partial configuration) as
// validateKubeletConfig does and returns the decoder's error, if any.
func decodeKubeletConfig(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var kc kubeletv1beta1.KubeletConfiguration
	_, err = sigsjson.UnmarshalStrict(data, &kc)
	return err
}

// jsonFieldType returns the type of struct t's field with JSON name
// name, looking into embedded and inline structs as encoding/json does.
func jsonFieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if tag == "" && (f.Anonymous || opts == "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if t, ok := jsonFieldType(ft, name); ok {
					return t, true
				}
			}
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

// kubeletValueFormat says what a value of type t must look like, for a
// value the decoder could not read ("" for other types).
func kubeletValueFormat(t reflect.Type) string {
	switch t {
	case durationType:
		return "must be a duration such as 30s, 5m or 1h30m (units ns, us, ms, s, m, h; at most about 290 years)"
	case logDurationType:
		return "must be a duration such as 5s or 1m, or a number of nanoseconds"
	case quantityType, quantityValueType:
		return "must be a quantity such as 100Mi, 1Gi or 500M"
	}
	return "must be a value the kubelet can read"
}

// kubeletUnknownNullFields returns the paths of the null members of cfg
// that name no KubeletConfiguration field (at any depth: a struct's
// unknown member; map keys are free). The strict decoder never sees them,
// as the configuration is decoded without its null members.
func kubeletUnknownNullFields(p *field.Path, cfg map[string]any) []*field.Path {
	var out []*field.Path
	var walk func(p *field.Path, t reflect.Type, v any)
	walk = func(p *field.Path, t reflect.Type, v any) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
			return
		}
		switch t.Kind() {
		case reflect.Struct:
			m, _ := v.(map[string]any)
			for _, k := range sortedKeys(m) {
				ft, ok := jsonFieldType(t, k)
				switch {
				case !ok && m[k] == nil:
					out = append(out, p.Child(k))
				case ok:
					walk(p.Child(k), ft, m[k])
				}
			}
		case reflect.Map:
			m, _ := v.(map[string]any)
			for _, k := range sortedKeys(m) {
				walk(p.Key(k), t.Elem(), m[k])
			}
		case reflect.Slice:
			l, _ := v.([]any)
			for i, e := range l {
				walk(p.Index(i), t.Elem(), e)
			}
		}
	}
	walk(p, reflect.TypeFor[kubeletv1beta1.KubeletConfiguration](), cfg)
	return out
}
