package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
)

// FuzzLoad feeds arbitrary documents to Load (decode, default, convert,
// validate). It must never panic; every failure is an *InvalidSpecError
// whose lines stay bounded however long the values in the input are; a
// loaded spec validates again without errors (validation and defaulting
// are stable) and loading is deterministic.
//
// Seeds: the documented examples, the minimal worker and the regression
// inputs under testdata/fuzz/FuzzLoad. CI runs it briefly (make
// fuzz-short).
func FuzzLoad(f *testing.F) {
	for _, data := range examples(f) {
		f.Add(data)
	}
	f.Add([]byte(testspec.MinimalWorker))
	f.Add([]byte(testspec.MinimalWorker + "---\n" + testspec.MinimalWorker))
	f.Add([]byte(`{"apiVersion":"machineadm.io/v1alpha1","kind":"MachineBootstrapConfig","spec":{"role":"Worker","role":"ControlPlane"}}`))
	f.Add([]byte(strings.Replace(testspec.MinimalWorker, "spec:\n", "metadata: {name: \"a\\e[31mb\"}\nspec:\n", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Load(data, "fuzz.yaml")
		if err != nil {
			var ise *InvalidSpecError
			if !errors.As(err, &ise) {
				t.Fatalf("Load returned %T, want *InvalidSpecError: %v", err, err)
			}
			if len(ise.Errors) == 0 {
				t.Fatal("InvalidSpecError without errors")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if len(line) > maxErrorLine {
					t.Fatalf("error line of %d bytes, more than %d: %.200q…", len(line), maxErrorLine, line)
				}
			}
			return
		}
		if l.Config == nil {
			t.Fatal("Load succeeded without a config")
		}
		if res := validation.Validate(l.Config); len(res.Errors) > 0 {
			t.Fatalf("a loaded spec fails validation again: %v", res.Errors)
		}
		again, err := Load(data, "fuzz.yaml")
		if err != nil {
			t.Fatalf("second Load failed: %v", err)
		}
		if !reflect.DeepEqual(l, again) {
			t.Fatal("Load is not deterministic")
		}
	})
}
