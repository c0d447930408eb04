package validation

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// FuzzKubeletRanges feeds arbitrary partial KubeletConfigurations (YAML
// or JSON, as spec.node.kubelet.config), a kubelet --feature-gates value
// and the action to validateKubeletFlagGates and validateKubeletConfig,
// which decode them strictly and check the kubelet's ranges. It must never panic; every error is
// at or below spec.node.kubelet (the configuration or the extraArgs it
// reads); and the result is deterministic.
//
// Seeds: every case of TestKubeletRanges with its flags, the unreadable
// values and the --feature-gates values of the other tests. CI runs it
// briefly (make fuzz-short).
func FuzzKubeletRanges(f *testing.F) {
	for _, tc := range kubeletTestCases() {
		f.Add(tc.cfg, strings.Join(tc.flags, ","), tc.join)
	}
	for _, tc := range kubeletUnreadableCases {
		f.Add(tc.cfg, "", tc.join)
	}
	for _, v := range kubeletFlagGateValues {
		f.Add(`{memoryThrottlingFactor: 0.5}`, v.value, false)
	}
	f.Add(`{imageMaximumGCAge: 1h1000000000h, logging: {flushFrequency: x}}`, "MemoryQoS", true)
	f.Fuzz(func(t *testing.T, cfgText, gates string, join bool) {
		var cfg map[string]any
		if yaml.Unmarshal([]byte(cfgText), &cfg) != nil {
			return
		}
		args := []machineadm.Arg{{Name: "feature-gates", Value: gates}}
		p := field.NewPath("spec", "node", "kubelet")
		run := func() field.ErrorList {
			var r Result
			validateKubeletFlagGates(&r, args, p.Child("extraArgs"))
			validateKubeletConfig(&r, cfg, args, join, p.Child("config"))
			return r.Errors
		}
		errs := run()
		for _, e := range errs {
			if e.Field != "spec.node.kubelet" && !strings.HasPrefix(e.Field, "spec.node.kubelet.") {
				t.Fatalf("error outside spec.node.kubelet: %v", e)
			}
			if e.Detail == "" && e.Type == field.ErrorTypeInvalid {
				t.Fatalf("invalid without a message: %v", e)
			}
		}
		if again := run(); !reflect.DeepEqual(errs, again) {
			t.Fatalf("not deterministic:\n%v\n%v", errs, again)
		}
	})
}
