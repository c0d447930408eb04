package domainjoin

import (
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host"
)

// stepOrder places domain-join right after files (host.Register): the
// files a join may need (krb5 settings, CA bundles) are written first, and
// the join comes before containerd and kubeadm.
const stepOrder = 15

func init() {
	host.Register(stepOrder, func(cfg *machineadm.MachineBootstrapConfig) (host.Step, bool) {
		dj := cfg.Spec.Host.DomainJoin
		return Step(dj, Options{}), dj != nil
	})
}
