package v1alpha1

// ConvertFromHub returns a copy of in with apiVersion and kind set to this
// version's. v1alpha1 is the newest version, so it is the hub (package
// machineadm aliases these types) and the copy is the whole conversion.
//
// Deprecated: use spec.Migrate, which decodes a spec of any supported
// version into the newest one. This function is kept only until
// `config migrate` (pkg/cmd) calls spec.Migrate, and is removed then: once
// v1alpha2 exists, v1alpha1 converts into it (v1alpha2's conversion), never
// from the hub.
func ConvertFromHub(in *MachineBootstrapConfig) (*MachineBootstrapConfig, error) {
	out := *in
	out.APIVersion, out.Kind = APIVersion, Kind
	return &out, nil
}
