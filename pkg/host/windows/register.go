package windows

import (
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
)

// The Windows host concerns. Each registers on every GOOS (the package's
// pure parts build and are tested on Linux), runs only on Windows
// (host.OSWindows), and reaches Windows through the default Options;
// Steps builds the same concerns with explicit Options.
func init() {
	for _, c := range []struct {
		concern host.Concern
		build   func(cfg *machineadm.MachineBootstrapConfig, o Options) (host.Step, bool)
	}{
		{host.Concern{Name: StepFeatures, Order: 25, Class: errclass.HostPreparationFailed,
			Short: "Check that the Windows features a worker needs (Containers) are enabled"}, featuresStep},
		{host.Concern{Name: StepContainerd, Order: 40, Class: errclass.ContainerRuntimeUnavailable,
			Short:  "Write containerd's config.toml in its Windows form; restart containerd on change",
			Fields: []string{"spec.host.containerd"}, Validation: "validateHost, validateContainerdPrep"}, containerdWindowsStep},
		{host.Concern{Name: StepKubeletService, Order: 50, Class: errclass.KubeletFailed,
			Short: "Register the kubelet as the Windows service kubeadm starts"}, kubeletServiceStep},
		{host.Concern{Name: StepFirewall, Order: 60, Class: errclass.HostPreparationFailed,
			Short: "Allow the kubelet's and NodePorts' inbound ports in Windows Firewall"}, firewallStep},
	} {
		build := c.build
		builders[c.concern.Name] = build
		c.concern.OS = []string{host.OSWindows}
		c.concern.Step = func(cfg *machineadm.MachineBootstrapConfig) (host.Step, bool) {
			return build(cfg, Options{}.withDefaults())
		}
		host.Register(c.concern)
	}
}
