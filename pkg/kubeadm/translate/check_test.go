package translate

import (
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

func TestKubeadmErrorField(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{}
	cfg.Spec.Kubernetes.Version = "v1.35.0"
	for msg, want := range map[string]string{
		"this version of kubeadm only supports deploying clusters with the control plane version >= 1.36.0. Current version: v1.35.0": "spec.kubernetes.version",
		"featureGates: Invalid value: map[string]bool{\"Nope\":true}: Nope is not a valid feature name.":                              "spec.kubernetes.featureGates",
		"something else entirely": "spec",
	} {
		if got := kubeadmErrorField(cfg, msg); got != want {
			t.Errorf("%q → %s, want %s", msg, got, want)
		}
	}
}
