package cpunits

import "github.com/machineadm/machineadm/pkg/apis/machineadm"

// The system accounts of the Systemd control plane. The API server, the
// controller manager and the scheduler run as kubeadm's own names for its
// RootlessControlPlane feature (cmd/kubeadm/app/constants
// KubeAPIServerUserName, KubeControllerManagerUserName,
// KubeSchedulerUserName; the kubeadm adapter's tests check they stay
// equal). etcd runs as "etcd", not kubeadm's "kubeadm-etcd": it owns the
// data directory, which CIS 1.1.12 and STIG V-242445 want owned by
// etcd:etcd (the account a static-pod control plane's profile creates for
// the same reason). None of them owns a key, certificate or kubeconfig:
// those stay root:root 0600 and reach the process as credentials
// (Component.Credentials).
const (
	EtcdUser              = "etcd"
	APIServerUser         = "kubeadm-kas"
	ControllerManagerUser = "kubeadm-kcm"
	SchedulerUser         = "kubeadm-ks"
)

// Accounts are the system accounts of the control-plane units: one user
// per component (etcd's only with a local etcd). A host made by an older
// machineadm keeps the accounts it has (kubeadm-etcd, the group
// kubeadm-sa-key-readers): nothing runs as them or is owned by them once
// the units and path rules are rewritten.
func Accounts(localEtcd bool) []Account {
	var a []Account
	if localEtcd {
		a = append(a, Account{Name: EtcdUser, Description: "etcd (machineadm control plane)"})
	}
	return append(a,
		Account{Name: APIServerUser, Description: "kube-apiserver (machineadm control plane)"},
		Account{Name: ControllerManagerUser, Description: "kube-controller-manager (machineadm control plane)"},
		Account{Name: SchedulerUser, Description: "kube-scheduler (machineadm control plane)"},
	)
}

// AccountsFor are the accounts spec cfg's control plane runs as: Accounts
// for a control-plane node of runtime Systemd, none otherwise. The host
// step "accounts" creates them before any file is written, so that files
// (spec.host.files, the API server's webhook kubeconfigs) can be owned by
// them.
func AccountsFor(cfg *machineadm.MachineBootstrapConfig) []Account {
	cp := cfg.Spec.ControlPlane
	if cfg.Spec.Role != machineadm.RoleControlPlane || cp == nil || cp.Runtime != machineadm.RuntimeSystemd {
		return nil
	}
	return Accounts(cp.Etcd.External == nil)
}
