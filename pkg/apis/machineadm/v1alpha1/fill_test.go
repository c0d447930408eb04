package v1alpha1

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// filler sets every field reachable from a value to a distinct non-zero
// value, so that a test using it covers fields added later without being
// edited. Values are chosen to survive a JSON round trip unchanged:
// free-form (any) values hold what sigs.k8s.io/json decodes, as the loader
// does: strings, booleans, int64 for integers, float64 otherwise, lists and
// objects.
type filler struct {
	n int
}

func (f *filler) next() int {
	f.n++
	return f.n
}

// fill sets v (addressable) and everything below it. It fails the test for
// a kind it does not know, so a new kind of field cannot be skipped
// silently.
func (f *filler) fill(t *testing.T, v reflect.Value, path string) {
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
			m.SetMapIndex(reflect.ValueOf(fmt.Sprintf("k%d", f.next())), val)
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

// zeroFields lists the paths of fields below v that are still zero.
func zeroFields(v reflect.Value, path string) []string {
	if v.IsZero() {
		return []string{path}
	}
	var out []string
	switch v.Kind() {
	case reflect.Pointer:
		out = zeroFields(v.Elem(), path)
	case reflect.Struct:
		for i := range v.NumField() {
			out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
	case reflect.Slice:
		for i := range v.Len() {
			out = append(out, zeroFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			out = append(out, zeroFields(iter.Value(), path+"["+iter.Key().String()+"]")...)
		}
	}
	return out
}

// fullConfig returns a MachineBootstrapConfig with every field set to a
// non-zero value, and apiVersion and kind set to this version's.
func fullConfig(t *testing.T) *MachineBootstrapConfig {
	t.Helper()
	var c MachineBootstrapConfig
	(&filler{}).fill(t, reflect.ValueOf(&c).Elem(), "MachineBootstrapConfig")
	c.APIVersion, c.Kind = APIVersion, Kind
	if z := zeroFields(reflect.ValueOf(c), "MachineBootstrapConfig"); len(z) > 0 {
		t.Fatalf("filler left zero fields:\n  %s", strings.Join(z, "\n  "))
	}
	return &c
}

func TestFillerSetsEveryField(t *testing.T) {
	c := fullConfig(t)
	// Spot checks that the filler reaches deep and odd shapes.
	if c.Spec.Node.Taints == nil || len(*c.Spec.Node.Taints) != 2 || (*c.Spec.Node.Taints)[1].Effect == "" {
		t.Errorf("taints (pointer to list) not filled: %+v", c.Spec.Node.Taints)
	}
	if len(c.Spec.ControlPlane.APIServer.ExtraArgs) != 2 {
		t.Errorf("inlined Component.ExtraArgs not filled")
	}
	if c.Spec.Report.Console == nil || !*c.Spec.Report.Console {
		t.Errorf("report.console (pointer to bool) not filled")
	}
	if len(c.Spec.Host.Containerd.Registries[1].Mirrors[1].Capabilities) != 2 {
		t.Errorf("nested lists not filled")
	}
}
