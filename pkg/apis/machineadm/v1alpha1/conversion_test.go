package v1alpha1

import "testing"

// TestConvertFromHubSetsTypeMeta checks that apiVersion and kind are set
// whatever the input holds, and that the input is not changed.
func TestConvertFromHubSetsTypeMeta(t *testing.T) {
	in := &MachineBootstrapConfig{APIVersion: "machineadm.io/v0", Spec: MachineBootstrapSpec{Role: RoleWorker}}
	out, err := ConvertFromHub(in)
	if err != nil {
		t.Fatal(err)
	}
	if out.APIVersion != APIVersion || out.Kind != Kind {
		t.Errorf("got apiVersion %q kind %q, want %q %q", out.APIVersion, out.Kind, APIVersion, Kind)
	}
	if out.Spec.Role != RoleWorker {
		t.Errorf("role = %q, want Worker", out.Spec.Role)
	}
	if in.APIVersion != "machineadm.io/v0" || in.Kind != "" {
		t.Errorf("ConvertFromHub changed its input: %q %q", in.APIVersion, in.Kind)
	}
}
