// Package fill sets every field of a spec value by reflection, for tests
// that must cover fields added later without being edited.
package fill

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// All sets every field reachable from the value v points to (a pointer
// to a struct of spec types) to a distinct non-zero value, so that a test
// using it covers fields added later without being edited. Lists and maps
// get two entries each. Values survive a JSON round trip unchanged:
// free-form (any) values hold what sigs.k8s.io/json decodes, as the loader
// does: strings, booleans, int64 for integers, float64 otherwise, lists
// and objects. All fails the test for a kind it does not know, for an
// unexported field and for a map key that is not a string, so a new kind
// of field cannot be skipped silently; and when a field is still zero
// afterwards.
func All(t testing.TB, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		t.Fatalf("fill.All: want a non-nil pointer, got %T", v)
	}
	name := rv.Elem().Type().Name()
	(&filler{}).fill(t, rv.Elem(), name)
	if z := ZeroFields(rv.Elem(), name); len(z) > 0 {
		t.Fatalf("fill.All left zero fields:\n  %s", strings.Join(z, "\n  "))
	}
}

type filler struct{ n int }

func (f *filler) next() int {
	f.n++
	return f.n
}

func (f *filler) fill(t testing.TB, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", f.next()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.next()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.next()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.next()) + 0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		f.fill(t, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			if !sf.IsExported() {
				t.Fatalf("%s.%s: unexported field; the spec types must be plain data", path, sf.Name)
			}
			f.fill(t, v.Field(i), path+"."+sf.Name)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			f.fill(t, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			t.Fatalf("%s: map key %s is not a string; JSON cannot carry it", path, v.Type().Key())
		}
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			val := reflect.New(v.Type().Elem()).Elem()
			f.fill(t, val, fmt.Sprintf("%s[%d]", path, i))
			m.SetMapIndex(reflect.ValueOf(fmt.Sprintf("k%d", f.next())).Convert(v.Type().Key()), val)
		}
		v.Set(m)
	case reflect.Interface:
		// A free-form value (for example kubelet.config): one of each JSON
		// type, nested.
		n := f.next()
		v.Set(reflect.ValueOf(map[string]any{
			"str":  fmt.Sprintf("s%d", n),
			"int":  int64(n),
			"frac": float64(n) + 0.5,
			"bool": true,
			"list": []any{"a", int64(2)},
			"obj":  map[string]any{"x": "y"},
		}))
	default:
		t.Fatalf("%s: the filler does not know kind %s; teach it", path, v.Kind())
	}
}

// ZeroFields lists the paths (Go field names, from path) of fields below
// v that are still zero. A struct without fields (an upstream marker such
// as the identity encryption provider's {}) has nothing to fill and is
// never reported; a nil pointer to one is.
func ZeroFields(v reflect.Value, path string) []string {
	if v.Kind() == reflect.Struct && v.NumField() == 0 {
		return nil
	}
	if v.IsZero() {
		return []string{path}
	}
	var out []string
	switch v.Kind() {
	case reflect.Pointer:
		out = ZeroFields(v.Elem(), path)
	case reflect.Struct:
		for i := range v.NumField() {
			out = append(out, ZeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
	case reflect.Slice:
		for i := range v.Len() {
			out = append(out, ZeroFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			out = append(out, ZeroFields(iter.Value(), path+"["+iter.Key().String()+"]")...)
		}
	}
	return out
}
