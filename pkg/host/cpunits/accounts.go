package cpunits

import "github.com/machineadm/machineadm/pkg/apis/machineadm"

// The system accounts of the Systemd control plane: kubeadm's own names
// for its RootlessControlPlane feature (cmd/kubeadm/app/constants
// EtcdUserName, KubeAPIServerUserName, KubeControllerManagerUserName,
// KubeSchedulerUserName, ServiceAccountKeyReadersGroupName; the kubeadm
// adapter's tests check they stay equal).
const (
	EtcdUser                 = "kubeadm-etcd"
	APIServerUser            = "kubeadm-kas"
	ControllerManagerUser    = "kubeadm-kcm"
	SchedulerUser            = "kubeadm-ks"
	ServiceAccountKeyReaders = "kubeadm-sa-key-readers"
)

// Accounts are the system accounts of the control-plane units: the group
// that may read the service-account signing key, then one user per
// component (etcd's only with a local etcd).
func Accounts(localEtcd bool) []Account {
	a := []Account{{Name: ServiceAccountKeyReaders, GroupOnly: true}}
	if localEtcd {
		a = append(a, Account{Name: EtcdUser, Description: "etcd (machineadm control plane)"})
	}
	return append(a,
		Account{Name: APIServerUser, Description: "kube-apiserver (machineadm control plane)", MemberOf: []string{ServiceAccountKeyReaders}},
		Account{Name: ControllerManagerUser, Description: "kube-controller-manager (machineadm control plane)", MemberOf: []string{ServiceAccountKeyReaders}},
		Account{Name: SchedulerUser, Description: "kube-scheduler (machineadm control plane)"},
	)
}

// AccountsFor are the accounts spec cfg's control plane runs as: Accounts
// for a control-plane node of runtime Systemd, none otherwise. The host
// step "accounts" creates them before any file is written, so that files
// (spec.host.files, the API server's configuration) can be owned by them.
func AccountsFor(cfg *machineadm.MachineBootstrapConfig) []Account {
	cp := cfg.Spec.ControlPlane
	if cfg.Spec.Role != machineadm.RoleControlPlane || cp == nil || cp.Runtime != machineadm.RuntimeSystemd {
		return nil
	}
	return Accounts(cp.Etcd.External == nil)
}
