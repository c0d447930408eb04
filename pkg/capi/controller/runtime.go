package controller

import (
	mspec "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// RuntimeAnnotation on a MachineadmConfig sets the machine spec's
// spec.controlPlane.runtime: "StaticPods" (the default, also when absent)
// or "Systemd". The control-plane provider (MachineadmControlPlane
// spec.runtime) sets it on the configs it creates; it is refused on a
// worker's config.
const RuntimeAnnotation = "controlplane.machineadm.io/runtime"

// runtimeOf reads RuntimeAnnotation; "" when absent.
func runtimeOf(cfg *bootstrapv1.MachineadmConfig) (mspec.ControlPlaneRuntime, error) {
	v, ok := cfg.Annotations[RuntimeAnnotation]
	if !ok {
		return "", nil
	}
	switch rt := mspec.ControlPlaneRuntime(v); rt {
	case mspec.RuntimeStaticPods, mspec.RuntimeSystemd:
		return rt, nil
	}
	return "", fieldError(`metadata.annotations["`+RuntimeAnnotation+`"]`, "must be "+string(mspec.RuntimeStaticPods)+" or "+string(mspec.RuntimeSystemd)+", not "+quoteValue(v))
}

func quoteValue(v string) string { return `"` + v + `"` }
