package domainjoin

import (
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
)

// stepOrder places domain-join right after files on Linux: the files a
// join may need (krb5 settings, CA bundles) are written first, and the
// join comes before containerd and kubeadm. On Windows it is first: its
// reboot comes before anything else.
const stepOrder = 15

// stepShort is the phase's one-line description.
const stepShort = "Join the Active Directory domain of spec.host.domainJoin (keytab on Linux; reboot on Windows)"

func init() {
	host.Register(host.Concern{
		Name: StepName, Short: stepShort, Order: stepOrder, Class: errclass.DomainJoinFailed,
		OS:         []string{host.OSLinux, host.OSWindows},
		Fields:     []string{"spec.host.domainJoin"},
		Validation: "validateDomainJoin",
		Step: func(cfg *machineadm.MachineBootstrapConfig) (host.Step, bool) {
			dj := cfg.Spec.Host.DomainJoin
			return Step(dj, Options{}), dj != nil
		},
	})
}
