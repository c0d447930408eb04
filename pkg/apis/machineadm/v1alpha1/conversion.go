package v1alpha1

import (
	"encoding/json"
	"fmt"

	sigsjson "sigs.k8s.io/json"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// ConvertToHub converts a v1alpha1 spec to the hub types.
//
// v1alpha1 and the hub have the same shape today, so every field is carried
// over mechanically by a strict JSON round trip: a field the hub lacks is an
// error, never a silent loss (TestRoundTripEveryField fills every field).
// When a later hub change makes a field differ, the difference is handled
// here by hand, after the mechanical copy.
func ConvertToHub(in *MachineBootstrapConfig) (*machineadm.MachineBootstrapConfig, error) {
	out := &machineadm.MachineBootstrapConfig{}
	if err := strictCopy(in, out); err != nil {
		return nil, fmt.Errorf("converting %s to hub: %w", APIVersion, err)
	}
	return out, nil
}

// ConvertFromHub converts hub types to v1alpha1, setting apiVersion and
// kind. It fails if the hub holds a field v1alpha1 cannot express.
func ConvertFromHub(in *machineadm.MachineBootstrapConfig) (*MachineBootstrapConfig, error) {
	out := &MachineBootstrapConfig{}
	if err := strictCopy(in, out); err != nil {
		return nil, fmt.Errorf("converting hub to %s: %w", APIVersion, err)
	}
	out.APIVersion, out.Kind = APIVersion, Kind
	return out, nil
}

func strictCopy(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(data, out)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("fields without a counterpart: %v", strictErrs)
	}
	return nil
}
