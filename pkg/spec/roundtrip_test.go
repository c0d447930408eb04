package spec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/internal/fill"
	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestRoundTripEveryField fills every field of every supported version's
// document type (fill.All, by reflection: fields added later are
// covered without editing this test), writes it as YAML and reads it back
// through the public decoder. Nothing may be dropped on the way to the
// hub: the hub spec has no zero field, and a document of the newest
// version (the hub itself) comes back equal to what was written.
func TestRoundTripEveryField(t *testing.T) {
	for apiVersion, v := range versions {
		t.Run(apiVersion, func(t *testing.T) {
			doc := reflect.New(v.root)
			fill.All(t, doc.Interface())
			doc.Elem().FieldByName("APIVersion").SetString(apiVersion)
			doc.Elem().FieldByName("Kind").SetString(machineadm.Kind)
			data, err := yaml.Marshal(doc.Interface())
			if err != nil {
				t.Fatal(err)
			}
			hub, got, err := DecodeNoDefaults(data, "filled")
			if err != nil {
				t.Fatalf("DecodeNoDefaults: %v", err)
			}
			if got != apiVersion {
				t.Errorf("apiVersion = %q, want %q", got, apiVersion)
			}
			if z := fill.ZeroFields(reflect.ValueOf(*hub), "hub"); len(z) > 0 {
				t.Errorf("fields lost on the way to the hub:\n  %s", strings.Join(z, "\n  "))
			}
			if apiVersion == machineadm.LatestAPIVersion && !reflect.DeepEqual(doc.Interface(), hub) {
				a, _ := json.MarshalIndent(doc.Interface(), "", " ")
				b, _ := json.MarshalIndent(hub, "", " ")
				t.Errorf("YAML -> decoder changed the spec:\n in  %s\n out %s", a, b)
			}
		})
	}
}

// TestMigrateSetsTypeMeta: config migrate's result is a document of the
// newest version, without defaults added.
func TestMigrateSetsTypeMeta(t *testing.T) {
	cfg, err := Migrate([]byte(testspec.MinimalWorker), "worker")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.APIVersion != machineadm.LatestAPIVersion || cfg.Kind != machineadm.Kind {
		t.Errorf("Migrate: apiVersion %q kind %q, want %q %q", cfg.APIVersion, cfg.Kind, machineadm.LatestAPIVersion, machineadm.Kind)
	}
	if cfg.Spec.Kubernetes.ClusterName != "" || cfg.Spec.Action != "" {
		t.Errorf("Migrate added defaults: clusterName %q action %q", cfg.Spec.Kubernetes.ClusterName, cfg.Spec.Action)
	}
	if _, err := Migrate([]byte(strings.Replace(testspec.MinimalWorker, "v1alpha1", "v0", 1)), "old"); !IsInvalidSpec(err) {
		t.Errorf("Migrate of an unknown version: err = %v, want *InvalidSpecError", err)
	}
}
