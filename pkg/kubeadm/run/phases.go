package run

import (
	"slices"
	"strings"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/systemd"
)

// Phase is one row of kubeadm's phase table: a phase or sub-phase of
// `kubeadm init` or `kubeadm join` (v1.37), under kubeadm's own name.
// A sub-phase's Name is "parent/child", as kubeadm's --skip-phases
// spells it: "certs/apiserver", "addon/kube-proxy".
type Phase struct {
	// Name is kubeadm's full phase name.
	Name string
	// Short describes the phase in one line.
	Short string
	// Flags are extra flags of `kubeadm init` / `kubeadm join` the phase
	// needs, for example "--upload-certs". A sub-phase also gets its
	// parents' flags.
	Flags []string
	// Class is the error class of a failure in this phase whose error and
	// output match none of the message rules (see Classify). A sub-phase
	// without one takes its parent's.
	Class errclass.Class
	// Hint is the hint of a failure that Class classifies: what the
	// phase needed and what to do. Empty: the class's default hint
	// (errclass.DefaultHint). A hint of the error's own, or of a message
	// rule, is more precise and wins (Classify).
	Hint string
	// Upgrade marks one of kubeadm's upgrade phases (day 2,
	// day2.UpgradeRunner): the message rules written for init's and
	// join's token discovery, TLS bootstrap and control-plane join do not
	// apply to it (Classify), since the words they match (x509, a
	// certificate signing request) reach an upgrade's error from the API
	// server for other reasons, and their hints name spec.join.
	Upgrade bool
	// RunIf says whether the phase applies to a spec (kubeadm's RunIf);
	// nil means always. A sub-phase applies only when its parent does.
	RunIf func(cfg *machineadm.MachineBootstrapConfig) bool
	// Journal says that failures of the phase are usually the kubelet's:
	// the kubelet's journal is read into the output (Runner.Journal).
	Journal bool
	// Hidden marks a phase kubeadm hides: it has no `kubeadm VERB phase`
	// subcommand, but runs unless skipped.
	Hidden bool
	// Never marks a phase of kubeadm's tree that machineadm never runs:
	// it is always in --skip-phases and never in a workflow.
	Never bool
	// RefusesRerun marks a phase that cannot run again once the phases
	// after it ran: kubeadm's preflight refuses the static pod manifests,
	// the etcd data directory, kubelet.conf and the ports they create. A
	// runner that resumes after a crash must never lose the record that it
	// completed (machineadm's state file makes that record durable); every
	// other phase converges when run again.
	RefusesRerun bool
	// Systemd replaces the phase when spec.controlPlane.runtime is Systemd
	// (pkg/kubeadm/systemd: units instead of static pods); nil: kubeadm runs it
	// in both runtimes.
	Systemd systemd.SystemdRun
}

// Leaf says whether p has no sub-phases in table.
func (p Phase) Leaf(table []Phase) bool {
	for _, q := range table {
		if strings.HasPrefix(q.Name, p.Name+"/") {
			return false
		}
	}
	return true
}

func localEtcd(cfg *machineadm.MachineBootstrapConfig) bool {
	return cfg.Spec.ControlPlane != nil && cfg.Spec.ControlPlane.Etcd.Local != nil
}

func hasCertificateKey(cfg *machineadm.MachineBootstrapConfig) bool {
	return cfg.Spec.ControlPlane != nil && cfg.Spec.ControlPlane.CertificateKey != nil
}

func controlPlaneJoin(cfg *machineadm.MachineBootstrapConfig) bool {
	return cfg.Spec.Role == machineadm.RoleControlPlane
}

func controlPlaneLocalEtcd(cfg *machineadm.MachineBootstrapConfig) bool {
	return controlPlaneJoin(cfg) && localEtcd(cfg)
}

// initTable is kubeadm init's phase tree (cmd/kubeadm/app/cmd/init.go and
// phases/init of kubeadm v1.37), in kubeadm's order, parents before their
// children. kubeadm's "all" sub-phases only exist as command-line
// shortcuts and are not listed. TestPhaseTablesMatchKubeadm compares this
// table with the tree of the compiled-in kubeadm command.
var initTable = []Phase{
	{Name: "preflight", Short: "Run kubeadm's pre-flight checks", Class: errclass.PreflightFailed, RefusesRerun: true},
	{Name: "certs", Short: "Create the certificates (signed by the given CAs)", Class: errclass.HostPreparationFailed},
	{Name: "certs/ca", Short: "Use or create the cluster CA"},
	{Name: "certs/apiserver", Short: "Create the API server serving certificate"},
	{Name: "certs/apiserver-kubelet-client", Short: "Create the API server's client certificate for kubelets"},
	{Name: "certs/front-proxy-ca", Short: "Use or create the front-proxy CA"},
	{Name: "certs/front-proxy-client", Short: "Create the front-proxy client certificate"},
	{Name: "certs/etcd-ca", Short: "Use or create the etcd CA"},
	{Name: "certs/etcd-server", Short: "Create the etcd serving certificate"},
	{Name: "certs/etcd-peer", Short: "Create the etcd peer certificate"},
	{Name: "certs/etcd-healthcheck-client", Short: "Create the etcd health-check client certificate"},
	{Name: "certs/apiserver-etcd-client", Short: "Create the API server's etcd client certificate"},
	{Name: "certs/sa", Short: "Use or create the service-account signing key pair"},
	{Name: "kubeconfig", Short: "Create the kubeconfig files", Class: errclass.HostPreparationFailed},
	{Name: "kubeconfig/admin", Short: "Create admin.conf"},
	{Name: "kubeconfig/super-admin", Short: "Create super-admin.conf"},
	{Name: "kubeconfig/kubelet", Short: "Create the kubelet's bootstrap kubelet.conf"},
	{Name: "kubeconfig/controller-manager", Short: "Create controller-manager.conf"},
	{Name: "kubeconfig/scheduler", Short: "Create scheduler.conf"},
	{Name: "etcd", Short: "Create the local etcd static pod manifest", Class: errclass.EtcdUnhealthy, RunIf: localEtcd},
	{Name: "etcd/local", Short: "Create the manifest of a local, single-member etcd", Systemd: systemd.SystemdEtcdPhase},
	{Name: "control-plane", Short: "Create the control-plane static pod manifests", Class: errclass.HostPreparationFailed},
	{Name: "control-plane/apiserver", Short: "Create the kube-apiserver manifest", Systemd: systemd.SystemdComponent(kubeadmconstants.KubeAPIServer)},
	{Name: "control-plane/controller-manager", Short: "Create the kube-controller-manager manifest", Systemd: systemd.SystemdComponent(kubeadmconstants.KubeControllerManager)},
	{Name: "control-plane/scheduler", Short: "Create the kube-scheduler manifest", Systemd: systemd.SystemdComponent(kubeadmconstants.KubeScheduler)},
	{Name: "kubelet-start", Short: "Write the kubelet settings and (re)start the kubelet", Class: errclass.KubeletFailed, Journal: true},
	{Name: "wait-control-plane", Short: "Wait for the control plane to become healthy", Class: errclass.ControlPlaneUnhealthy, Journal: true, Systemd: systemd.SystemdWaitControlPlanePhase},
	{Name: "upload-config", Short: "Upload the kubeadm and kubelet configuration to ConfigMaps", Class: errclass.ControlPlaneUnhealthy},
	{Name: "upload-config/kubeadm", Short: "Upload the ClusterConfiguration"},
	{Name: "upload-config/kubelet", Short: "Upload the kubelet configuration"},
	{Name: "upload-certs", Short: "Upload the shared certificates, encrypted with the certificate key", Class: errclass.ControlPlaneUnhealthy,
		Flags: []string{"--upload-certs", "--skip-certificate-key-print"}, RunIf: hasCertificateKey},
	{Name: "mark-control-plane", Short: "Label and taint the node as control plane", Class: errclass.ControlPlaneUnhealthy},
	{Name: "bootstrap-token", Short: "Create bootstrap tokens and their RBAC rules", Class: errclass.ControlPlaneUnhealthy,
		Flags: []string{"--skip-token-print"}},
	{Name: "kubelet-finalize", Short: "Point the kubelet at its rotated client certificate", Class: errclass.ControlPlaneUnhealthy, Journal: true},
	{Name: "kubelet-finalize/enable-client-cert-rotation", Short: "Enable the kubelet's client certificate rotation"},
	{Name: "addon", Short: "Install the CoreDNS and kube-proxy addons", Class: errclass.ControlPlaneUnhealthy},
	{Name: "addon/coredns", Short: "Install CoreDNS"},
	{Name: "addon/kube-proxy", Short: "Install kube-proxy"},
	// It prints the join command, with a token and the certificate key.
	{Name: "show-join-command", Short: "Print the join command (never run: it prints secrets)", Class: errclass.Internal, Never: true},
}

// joinTable is kubeadm join's phase tree (cmd/kubeadm/app/cmd/join.go and
// phases/join of kubeadm v1.37), as initTable.
var joinTable = []Phase{
	{Name: "preflight", Short: "Run kubeadm's pre-flight checks and discover the cluster", Class: errclass.PreflightFailed, RefusesRerun: true},
	{Name: "control-plane-prepare", Short: "Prepare this machine to serve a control plane", Class: errclass.HostPreparationFailed, RunIf: controlPlaneJoin},
	{Name: "control-plane-prepare/download-certs", Short: "Download the shared certificates from the kubeadm-certs Secret", Class: errclass.PayloadUnavailable},
	{Name: "control-plane-prepare/certs", Short: "Create this member's certificates"},
	{Name: "control-plane-prepare/kubeconfig", Short: "Create the control-plane kubeconfig files"},
	{Name: "control-plane-prepare/control-plane", Short: "Create the control-plane static pod manifests", Systemd: systemd.SystemdComponent()},
	// Hidden in kubeadm; kubeadm runs its check from etcd-join as well.
	{Name: "check-etcd", Short: "Check the etcd cluster (never run alone: hidden in kubeadm)", Class: errclass.EtcdUnhealthy, Hidden: true, Never: true},
	{Name: "kubelet-start", Short: "Write the kubelet settings, TLS-bootstrap and start the kubelet", Class: errclass.KubeletFailed, Journal: true},
	{Name: "etcd-join", Short: "Add a local etcd member", Class: errclass.EtcdUnhealthy, RunIf: controlPlaneLocalEtcd, Systemd: systemd.SystemdEtcdJoinPhase},
	{Name: "kubelet-wait-bootstrap", Short: "Wait for the kubelet to finish its TLS bootstrap", Class: errclass.TLSBootstrapFailed, Journal: true},
	{Name: "control-plane-join", Short: "Join as a control-plane instance", Class: errclass.ControlPlaneUnhealthy, RunIf: controlPlaneJoin},
	{Name: "control-plane-join/mark-control-plane", Short: "Label and taint the node as control plane"},
	{Name: "wait-control-plane", Short: "Wait for the control plane to become healthy", Class: errclass.ControlPlaneUnhealthy, Journal: true, RunIf: controlPlaneJoin, Systemd: systemd.SystemdWaitControlPlanePhase},
}

// PhaseTable returns kubeadm's phase table for an action: init's for
// ActionInit, join's otherwise. The rows are kubeadm's order, parents
// first; the slice is a copy.
func PhaseTable(action machineadm.Action) []Phase {
	if action == machineadm.ActionInit {
		return slices.Clone(initTable)
	}
	return slices.Clone(joinTable)
}

// PhasesFor returns the rows of the table of cfg's action that apply to
// cfg: Never rows and rows whose RunIf (or a parent's) is false are left
// out. A row without a Class takes its parent's, and a parent's Journal
// holds for its sub-phases.
func PhasesFor(cfg *machineadm.MachineBootstrapConfig) []Phase {
	var out []Phase
	for _, p := range inherit(PhaseTable(cfg.Spec.Action)) {
		if p.Never || (p.RunIf != nil && !p.RunIf(cfg)) {
			continue
		}
		if parent := parentName(p.Name); parent != "" && !slices.ContainsFunc(out, func(q Phase) bool { return q.Name == parent }) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Lookup returns the row named name of the table of action, with Class
// and Journal inherited as in PhasesFor.
func Lookup(action machineadm.Action, name string) (Phase, bool) {
	for _, p := range inherit(PhaseTable(action)) {
		if p.Name == name {
			return p, true
		}
	}
	return Phase{}, false
}

// inherit fills each row's empty Class from its parent and sets Journal
// below a parent that has it. Parents come before children in table.
func inherit(table []Phase) []Phase {
	for i := range table {
		parent := parentName(table[i].Name)
		for _, q := range table[:i] {
			if q.Name != parent {
				continue
			}
			if table[i].Class == "" {
				table[i].Class = q.Class
			}
			table[i].Journal = table[i].Journal || q.Journal
		}
	}
	return table
}

// parentName is "certs" for "certs/apiserver" and "" for a top-level name.
func parentName(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

// skipFor returns kubeadm's --skip-phases list that leaves only the phase
// named run (with its parents) of table: every other row, except run's
// parents, and except rows below a row already skipped.
func skipFor(table []Phase, run string) []string {
	var skip []string
	for _, p := range table {
		if p.Name == run || strings.HasPrefix(run, p.Name+"/") || strings.HasPrefix(p.Name, run+"/") {
			continue
		}
		if parent := parentName(p.Name); parent != "" && slices.Contains(skip, parent) {
			continue
		}
		skip = append(skip, p.Name)
	}
	return skip
}

// flagsFor returns the flags of the row named name and of its parents.
func flagsFor(table []Phase, name string) []string {
	var flags []string
	for _, p := range table {
		if p.Name == name || strings.HasPrefix(name, p.Name+"/") {
			flags = append(flags, p.Flags...)
		}
	}
	return flags
}
