package controller

import (
	"fmt"

	mspec "github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// defaultBinaryDir is where the Systemd runtime's binaries are by default
// (the machine spec's default, /usr/local/bin/<component>).
const defaultBinaryDir = "/usr/local/bin/"

// systemdRuntime copies spec.controlPlane.runtime and binaries into the
// machine spec of a control-plane Machine and turns each of
// binarySources into a spec.host.files entry at its binary's path (mode
// 0755, fetched and checked by SHA-256 before anything runs), which the
// machine spec's validation then takes as the binary's delivery. A
// config file on one of those paths is a field error naming it.
func systemdRuntime(cfg *bootstrapv1.MachineadmConfig, sp *mspec.MachineBootstrapSpec) error {
	cp := cfg.Spec.ControlPlane
	if cp == nil || cp.Runtime == "" {
		return nil
	}
	sp.ControlPlane.Runtime = mspec.ControlPlaneRuntime(cp.Runtime)
	if sp.ControlPlane.Runtime != mspec.RuntimeSystemd {
		return nil
	}
	var in bootstrapv1.ControlPlaneBinaries
	if cp.Binaries != nil {
		in = *cp.Binaries
	}
	var src bootstrapv1.ControlPlaneBinarySources
	if cp.BinarySources != nil {
		src = *cp.BinarySources
	}
	external := externalEtcd(cfg) != nil
	b := &mspec.ControlPlaneBinaries{
		KubeAPIServer:         orDefault(in.KubeAPIServer, defaultBinaryDir+"kube-apiserver"),
		KubeControllerManager: orDefault(in.KubeControllerManager, defaultBinaryDir+"kube-controller-manager"),
		KubeScheduler:         orDefault(in.KubeScheduler, defaultBinaryDir+"kube-scheduler"),
	}
	if !external {
		b.Etcd = orDefault(in.Etcd, defaultBinaryDir+"etcd")
	}
	sp.ControlPlane.Binaries = b
	for _, x := range []struct {
		field, path string
		src         *bootstrapv1.RemoteSource
	}{
		{"etcd", b.Etcd, src.Etcd},
		{"kubeAPIServer", b.KubeAPIServer, src.KubeAPIServer},
		{"kubeControllerManager", b.KubeControllerManager, src.KubeControllerManager},
		{"kubeScheduler", b.KubeScheduler, src.KubeScheduler},
	} {
		if x.src == nil || x.path == "" {
			continue
		}
		for i, f := range cfg.Spec.Host.Files {
			if f.Path == x.path {
				return fieldError(fmt.Sprintf("spec.host.files[%d].path", i), fmt.Sprintf("%q is the control-plane binary that spec.controlPlane.binarySources.%s delivers", f.Path, x.field))
			}
		}
		// Checked here so that the error names the config's field, not
		// the spec.host.files entry made from it.
		if what := validation.URLCredentials(x.src.URL); what != "" {
			return fieldError("spec.controlPlane.binarySources."+x.field+".url", "holds "+what+", which would travel in the clear in the bootstrap data: fetch from a URL without it")
		}
		sp.Host.Files = append(sp.Host.Files, mspec.File{Path: x.path, Mode: "0755", Source: &mspec.RemoteSource{URL: x.src.URL, SHA256: x.src.SHA256}})
	}
	return nil
}
