package spec

import (
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
)

// The spec benchmarks run on every documented example. Compare Load with
// BaselineYAMLUnmarshal of the same run: the baseline is what a plain,
// lenient YAML decode into the v1alpha1 struct costs, without strict
// checks, defaults, conversion or validation.

func exampleNames(b *testing.B) ([]string, map[string][]byte) {
	ex := examples(b)
	names := make([]string, 0, len(ex))
	for n := range ex {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, ex
}

// BenchmarkLoad measures decode (strict) + default + convert + validate.
func BenchmarkLoad(b *testing.B) {
	names, ex := exampleNames(b)
	for _, n := range names {
		b.Run(n, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(ex[n])))
			for b.Loop() {
				if _, err := Load(ex[n], n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeNoDefaults measures the strict decode and conversion
// alone (no defaults, no validation).
func BenchmarkDecodeNoDefaults(b *testing.B) {
	names, ex := exampleNames(b)
	for _, n := range names {
		b.Run(n, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(ex[n])))
			for b.Loop() {
				if _, _, err := DecodeNoDefaults(ex[n], n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBaselineYAMLUnmarshal is the baseline: sigs.k8s.io/yaml.Unmarshal
// of the same bytes into v1alpha1.MachineBootstrapConfig.
func BenchmarkBaselineYAMLUnmarshal(b *testing.B) {
	names, ex := exampleNames(b)
	for _, n := range names {
		b.Run(n, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(ex[n])))
			for b.Loop() {
				var c v1alpha1.MachineBootstrapConfig
				if err := yaml.Unmarshal(ex[n], &c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
