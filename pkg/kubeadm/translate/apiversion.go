// Package translate turns the hub machine spec into kubeadm's
// configuration (Translate): kubeadm's own Go types, defaulted and
// validated by kubeadm, with secrets redacted from its errors. It also
// holds the checks that need only the spec and kubeadm's types: the
// version skew kubeadm supports (CheckVersionSkew), `config kubeadm`'s
// redacted translation (CheckSpec) and the inputs a spec consumes
// (SecretInputs).
//
// The kubeadm configuration API version is chosen from the target
// Kubernetes version (see ConfigAPIVersion); each API version has its own
// translator file (translate_v1beta4.go), so adding kubeadm's v1 later is a
// new file and one table entry.
package translate

import (
	"fmt"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
)

// translator turns a hub spec plus resolved secrets into kubeadm YAML
// documents of one kubeadm config API version.
type translator func(cfg *machineadm.MachineBootstrapConfig, in Inputs) (*Documents, error)

// apiVersionRange maps a range of Kubernetes minor versions (1.x) to the
// kubeadm config API version that configures them.
type apiVersionRange struct {
	minMinor, maxMinor int
	apiVersion         string
	translate          translator
}

// apiVersions lists, oldest first, which kubeadm config API configures
// which Kubernetes minor versions. kubeadm v1beta4 was introduced in
// Kubernetes 1.31; v1beta3 is gone from kubeadm 1.37, which machineadm
// embeds.
var apiVersions = []apiVersionRange{
	{minMinor: 31, maxMinor: 37, apiVersion: "kubeadm.k8s.io/v1beta4", translate: translateV1beta4},
}

// ConfigAPIVersion returns the kubeadm configuration API version
// ("kubeadm.k8s.io/v1beta4") used for a Kubernetes version such as
// "v1.37.2". It fails for malformed versions and versions outside every
// known range.
func ConfigAPIVersion(kubernetesVersion string) (string, error) {
	r, err := rangeFor(kubernetesVersion)
	if err != nil {
		return "", err
	}
	return r.apiVersion, nil
}

func rangeFor(kubernetesVersion string) (*apiVersionRange, error) {
	major, minor, _, err := validation.ParseVersion(kubernetesVersion)
	if err != nil {
		return nil, err
	}
	if major == 1 {
		for i := range apiVersions {
			if minor >= apiVersions[i].minMinor && minor <= apiVersions[i].maxMinor {
				return &apiVersions[i], nil
			}
		}
	}
	first, last := apiVersions[0], apiVersions[len(apiVersions)-1]
	return nil, fmt.Errorf("Kubernetes %s is not supported: machineadm configures v1.%d to v1.%d", kubernetesVersion, first.minMinor, last.maxMinor)
}
