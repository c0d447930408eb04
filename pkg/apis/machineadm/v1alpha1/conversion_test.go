package v1alpha1

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestRoundTripEveryField fills every field of v1alpha1 (found by
// reflection, so new fields are covered without editing this test),
// converts to the hub and back, and expects the same value.
func TestRoundTripEveryField(t *testing.T) {
	in := fullConfig(t)
	hub, err := ConvertToHub(in)
	if err != nil {
		t.Fatalf("ConvertToHub: %v", err)
	}
	if z := zeroFields(reflect.ValueOf(*hub), "hub"); len(z) > 0 {
		t.Errorf("hub lost fields in conversion:\n  %s", strings.Join(z, "\n  "))
	}
	out, err := ConvertFromHub(hub)
	if err != nil {
		t.Fatalf("ConvertFromHub: %v", err)
	}
	if !reflect.DeepEqual(in, out) {
		a, _ := json.MarshalIndent(in, "", " ")
		b, _ := json.MarshalIndent(out, "", " ")
		t.Errorf("v1alpha1 -> hub -> v1alpha1 changed the spec:\n in  %s\n out %s", a, b)
	}
	// The hub keeps the same JSON shape today, so its encoding equals the
	// versioned one byte for byte.
	a, _ := json.Marshal(in)
	b, _ := json.Marshal(hub)
	if string(a) != string(b) {
		t.Errorf("hub JSON differs from v1alpha1 JSON:\n v1alpha1 %s\n hub      %s", a, b)
	}
}

// TestConvertFromHubSetsTypeMeta checks that apiVersion and kind are set
// whatever the hub holds.
func TestConvertFromHubSetsTypeMeta(t *testing.T) {
	out, err := ConvertFromHub(&machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleWorker}})
	if err != nil {
		t.Fatal(err)
	}
	if out.APIVersion != APIVersion || out.Kind != Kind {
		t.Errorf("got apiVersion %q kind %q, want %q %q", out.APIVersion, out.Kind, APIVersion, Kind)
	}
	if out.Spec.Role != RoleWorker {
		t.Errorf("role = %q, want Worker", out.Spec.Role)
	}
}

// TestStrictCopyRefusesLoss shows the guard the mechanical conversion
// relies on: a field without a counterpart is an error, not a silent drop.
func TestStrictCopyRefusesLoss(t *testing.T) {
	type from struct {
		A string `json:"a"`
		B string `json:"b"`
	}
	type to struct {
		A string `json:"a"`
	}
	var out to
	err := strictCopy(&from{A: "x", B: "y"}, &out)
	if err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("strictCopy with a field missing on the target: err = %v, want an error naming \"b\"", err)
	}
	type mistyped struct {
		A int `json:"a"`
	}
	var m mistyped
	if err := strictCopy(&from{A: "x"}, &m); err == nil {
		t.Fatalf("strictCopy into a field of another type: want an error")
	}
}

// TestHubMatchesV1alpha1 compares the hub and v1alpha1 type trees field by
// field (name, JSON tag, kind, type name), so that editing one copy
// without the other fails here and not in a user's cluster.
func TestHubMatchesV1alpha1(t *testing.T) {
	var problems []string
	compareTypes(reflect.TypeFor[MachineBootstrapConfig](), reflect.TypeFor[machineadm.MachineBootstrapConfig](), "MachineBootstrapConfig", map[reflect.Type]bool{}, &problems)
	if len(problems) > 0 {
		t.Errorf("hub (pkg/apis/machineadm) and v1alpha1 types drifted apart; keep types.go in sync:\n  %s", strings.Join(problems, "\n  "))
	}
}

func compareTypes(v, h reflect.Type, path string, seen map[reflect.Type]bool, problems *[]string) {
	if v.Kind() != h.Kind() {
		*problems = append(*problems, path+": kind "+v.Kind().String()+" in v1alpha1, "+h.Kind().String()+" in hub")
		return
	}
	if v.Name() != h.Name() {
		*problems = append(*problems, path+": type "+v.Name()+" in v1alpha1, "+h.Name()+" in hub")
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice:
		compareTypes(v.Elem(), h.Elem(), path+"[]", seen, problems)
	case reflect.Map:
		compareTypes(v.Key(), h.Key(), path+"{key}", seen, problems)
		compareTypes(v.Elem(), h.Elem(), path+"{}", seen, problems)
	case reflect.Struct:
		if seen[v] {
			return
		}
		seen[v] = true
		if v.NumField() != h.NumField() {
			*problems = append(*problems, path+": different number of fields")
		}
		for i := range v.NumField() {
			vf := v.Field(i)
			hf, ok := h.FieldByName(vf.Name)
			if !ok {
				*problems = append(*problems, path+"."+vf.Name+": missing in hub")
				continue
			}
			if hf.Index[0] != i {
				*problems = append(*problems, path+"."+vf.Name+": at another position in hub")
			}
			if vf.Tag != hf.Tag {
				*problems = append(*problems, path+"."+vf.Name+": tag `"+string(vf.Tag)+"` in v1alpha1, `"+string(hf.Tag)+"` in hub")
			}
			if vf.Anonymous != hf.Anonymous {
				*problems = append(*problems, path+"."+vf.Name+": embedded in one copy only")
			}
			compareTypes(vf.Type, hf.Type, path+"."+vf.Name, seen, problems)
		}
		for i := range h.NumField() {
			if _, ok := v.FieldByName(h.Field(i).Name); !ok {
				*problems = append(*problems, path+"."+h.Field(i).Name+": missing in v1alpha1")
			}
		}
	}
}

// TestCompareTypesFindsDrift proves that compareTypes is not blind.
func TestCompareTypesFindsDrift(t *testing.T) {
	type inner struct {
		X string `json:"x"`
	}
	type innerB struct {
		X int `json:"x"`
	}
	type a struct {
		Name  string `json:"name"`
		Inner inner  `json:"inner"`
		Only  bool   `json:"only"`
	}
	type b struct {
		Name  string `json:"name,omitempty"`
		Inner innerB `json:"inner"`
		Extra bool   `json:"extra"`
	}
	var problems []string
	compareTypes(reflect.TypeFor[a](), reflect.TypeFor[b](), "a", map[reflect.Type]bool{}, &problems)
	want := []string{"a: type a in v1alpha1, b in hub", "a.Name: tag", "a.Inner: type inner", "a.Inner.X: kind string", "a.Only: missing in hub", "a.Extra: missing in v1alpha1"}
	joined := strings.Join(problems, "\n")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			t.Errorf("compareTypes did not report %q; got:\n%s", w, joined)
		}
	}
}
