// Package upgrade is what `machineadm upgrade` decides before it touches
// a host: the spec a node was last brought to (Record, kept on the node,
// secrets withheld), the table of which spec fields change in place and
// which are refused (Fields), and the plan that compares the recorded
// spec with a new one (Compute): what changes, in which phases, in which
// order. It is pure: it reads and writes only the record file it is
// given, and imports no host, kubeadm or workflow package, so the
// workflow (pkg/phases), the session and the command tree all use the same
// answer.
package upgrade

import (
	"slices"
	"strings"
)

// Effect says what `machineadm upgrade` does with a change of a field.
type Effect string

// The effects.
const (
	// InPlace: the change is applied to the running node by the phases
	// the row names.
	InPlace Effect = "InPlace"
	// BootstrapOnly: the field is read only when the node is created (a
	// join's token, the CA set to import); a change is recorded and has no
	// effect on a bootstrapped node.
	BootstrapOnly Effect = "BootstrapOnly"
	// RunOnly: the field steers the run itself (where the report goes,
	// which preflight errors to ignore); a change takes effect in this run
	// and changes nothing on the node.
	RunOnly Effect = "RunOnly"
	// Refused: the change cannot be made in place; `machineadm upgrade`
	// refuses the spec (exit code 2) naming the field and Why. Replace
	// the machine instead.
	Refused Effect = "Refused"
)

// Phase names of the upgrade workflow, in the order they run (PhaseOrder).
// The host concerns keep their bootstrap names (files, kernel-modules,
// sysctl, containerd, static-pods).
const (
	// PhasePlan prints the plan and checks the node against it (read only).
	PhasePlan = "upgrade-plan"
	// PhaseDrain cordons the node and evicts its pods (Eviction API) when
	// the plan disrupts its workloads (Plan.Drain); --skip-drain skips it.
	PhaseDrain = "drain"
	// PhaseFiles, PhaseAPIServerConfig, PhaseKernelModules, PhaseSysctl,
	// PhaseContainerd and PhaseStaticPods are the host concerns of the
	// same names; PhaseAPIServerConfig writes the API server's typed
	// security files (audit policy, encryption, authentication and
	// authorization configurations, webhook kubeconfigs), owner and mode
	// per control-plane runtime, before the API server is regenerated.
	PhaseFiles           = "files"
	PhaseAPIServerConfig = "apiserver-config"
	PhaseKernelModules   = "kernel-modules"
	PhaseSysctl          = "sysctl"
	PhaseContainerd      = "containerd"
	// PhaseKubeadm is kubeadm's upgrade of this node to a new Kubernetes
	// version: `kubeadm upgrade apply`'s phases on the first control plane
	// (action Init), `kubeadm upgrade node`'s on every other node, as its
	// sub-phases under kubeadm's names.
	PhaseKubeadm = "kubeadm-upgrade"
	// PhaseControlPlane regenerates the control-plane components whose
	// settings changed with kubeadm's own manifest code, one at a time
	// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler),
	// each healthy before the next, each backed up first and rolled back
	// when it does not become healthy. The Systemd runtime's units plug in
	// here (ControlPlaneComponents).
	PhaseControlPlane = "control-plane"
	// PhaseKubelet restarts the kubelet when its binary, configuration or
	// the Kubernetes version changed and waits (bounded) until the Node
	// reports the new version.
	PhaseKubelet = "kubelet"
	// PhaseStaticPods writes spec.host.staticPods (after kubeadm, as at
	// bootstrap).
	PhaseStaticPods = "static-pods"
	// PhaseCerts renews the kubeadm certificates that expire within the
	// renewal window.
	PhaseCerts = "certs-renew"
	// PhaseUncordon makes the node schedulable again after PhaseDrain.
	PhaseUncordon = "uncordon"
	// PhaseCompliance hardens the files kubeadm rewrote and evaluates
	// spec.security.profile's checks on the live node again, as at
	// bootstrap (harden, evidence); the outcome report records the new
	// verdicts. It runs on every upgrade of a node with a profile (an
	// upgrade rewrites files the profile hardens) and is planned when
	// spec.security changed.
	PhaseCompliance = "compliance"
	// PhaseRecord records the new spec as the node's applied spec
	// (Record); the last phase, so that an interrupted upgrade is planned
	// again, from the same recorded spec, by the next run.
	PhaseRecord = "record-spec"
)

// PhaseOrder is every top-level phase of the upgrade workflow in the order
// it runs. Host phases come before kubeadm's upgrade (the kubelet binary
// and containerd are in place before the kubelet restarts, the API
// server's security files before the API server is regenerated), static
// pods after the control plane, certificates last before the node is
// uncordoned, the compliance evidence on the finished node.
var PhaseOrder = []string{
	PhasePlan, PhaseDrain,
	PhaseFiles, PhaseAPIServerConfig, PhaseKernelModules, PhaseSysctl, PhaseContainerd,
	PhaseKubeadm, PhaseControlPlane, PhaseKubelet, PhaseStaticPods,
	PhaseCerts, PhaseUncordon, PhaseCompliance, PhaseRecord,
}

// Control-plane components, in the order PhaseControlPlane replaces them
// (kubeadm's order in its upgrade: etcd first, then the API server,
// controller manager and scheduler).
const (
	ComponentEtcd              = "etcd"
	ComponentAPIServer         = "kube-apiserver"
	ComponentControllerManager = "kube-controller-manager"
	ComponentScheduler         = "kube-scheduler"
)

// ControlPlaneComponents is the order in which PhaseControlPlane (and the
// Systemd runtime's unit upgrade) replaces components, one at a time.
var ControlPlaneComponents = []string{ComponentEtcd, ComponentAPIServer, ComponentControllerManager, ComponentScheduler}

// Field is one row of the field table: a spec field (and everything below
// it that has no row of its own) and what a change of it does.
type Field struct {
	// Path is the field's JSON path from the document root, "." between
	// names, no list indexes ("spec.host.files").
	Path string
	// Effect is what a change does.
	Effect Effect
	// Phases are the upgrade phases that apply an InPlace change
	// (PhaseOrder's names); for a control-plane component also the
	// component ("control-plane/kube-apiserver").
	Phases []string
	// Why says, for a person, why a Refused change cannot be made in place
	// or what an InPlace change does.
	Why string
	// Disrupts says that applying the change disrupts the node's workloads
	// (a new kubelet or container runtime): the node is drained first.
	Disrupts bool
}

const replace = "; replace the machine (or bootstrap it afresh) to change it"

// fields is the field table, one row per field that changes in place, is
// refused, or has its own effect. A field without a row of its own takes
// the row of its nearest parent; every field of the spec has a row or a
// parent with one (TestEveryFieldHasARow). A row whose fields have rows of
// their own is compared field by field; a change of its presence (set or
// removed) takes the row itself.
var fields = []Field{
	{Path: "apiVersion", Effect: RunOnly, Why: "the spec's version; specs are compared after conversion"},
	{Path: "kind", Effect: RunOnly, Why: "always MachineBootstrapConfig"},
	{Path: "metadata", Effect: BootstrapOnly, Why: "the spec's name is not used on the node"},
	{Path: "spec.os", Effect: Refused, Why: "a machine's operating system is fixed" + replace},
	{Path: "spec.role", Effect: Refused, Why: "a worker does not become a control plane, nor a control plane a worker, in place (etcd membership, certificates, manifests)" + replace},
	{Path: "spec.action", Effect: Refused, Why: "how the node entered the cluster (Init: the first control plane, Join: every other node) decides which kubeadm upgrade it runs" + replace},
	{Path: "spec.kubernetes.version", Effect: InPlace, Phases: []string{PhaseKubeadm, PhaseKubelet}, Disrupts: true, Why: "kubeadm upgrades the control plane (upgrade apply on the first control plane, upgrade node elsewhere) and the kubelet is restarted on the new version; one minor version at a time, never down"},
	{Path: "spec.kubernetes.clusterName", Effect: Refused, Why: "the cluster's name is in every kubeconfig kubeadm wrote" + replace},
	{Path: "spec.kubernetes.controlPlaneEndpoint", Effect: Refused, Why: "the cluster endpoint is in every kubeconfig and in the API server's certificate" + replace},
	{Path: "spec.kubernetes.imageRepository", Effect: InPlace, Phases: []string{PhaseControlPlane}, Why: "the control-plane manifests are regenerated with the new image names"},
	{Path: "spec.kubernetes.networking", Effect: Refused, Why: "the pod and service subnets and the DNS domain are cluster-wide and baked into certificates and running pods" + replace},
	{Path: "spec.kubernetes.featureGates", Effect: Refused, Why: "kubeadm's feature gates are cluster-wide settings of its configuration, fixed at init"},
	{Path: "spec.controlPlane", Effect: Refused, Why: "adding or removing the control-plane settings changes the node's role" + replace},
	{Path: "spec.controlPlane.advertiseAddress", Effect: Refused, Why: "the advertise address is the etcd member's peer URL and in the API server's certificate" + replace},
	{Path: "spec.controlPlane.bindPort", Effect: Refused, Why: "the API server's port is in every kubeconfig and in the load balancer" + replace},
	{Path: "spec.controlPlane.apiServer.extraArgs", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentAPIServer}, Why: "the API server's manifest is regenerated by kubeadm and the API server restarted"},
	{Path: "spec.controlPlane.apiServer.certSANs", Effect: Refused, Why: "kubeadm renews certificates with the names they have; new SANs need a new serving certificate issued by hand (kubeadm init phase certs apiserver)"},
	// The typed security settings (docs/apiserver-security.md): the
	// apiserver-config host step rewrites their files, and the API
	// server's manifest (or unit) is regenerated with their flags and
	// volumes; a new file content alone restarts it too (the manifest
	// carries the files' digest, pkg/kubeadm/day2).
	{Path: "spec.controlPlane.apiServer.audit", Effect: InPlace, Phases: typedSecurityPhases, Why: "the audit policy (and webhook kubeconfig) is rewritten and the API server restarted with the new audit flags and log volume"},
	{Path: "spec.controlPlane.apiServer.encryption", Effect: InPlace, Phases: typedSecurityPhases, Why: "the EncryptionConfiguration is rewritten and the API server restarted with it; existing Secrets stay encrypted as they were until rewritten, and a new key must reach every control plane before it becomes the first provider (docs/upgrade.md)"},
	{Path: "spec.controlPlane.apiServer.authentication", Effect: InPlace, Phases: typedSecurityPhases, Why: "the AuthenticationConfiguration (and webhook kubeconfig) is rewritten and the API server restarted with it"},
	{Path: "spec.controlPlane.apiServer.authorization", Effect: InPlace, Phases: typedSecurityPhases, Why: "the AuthorizationConfiguration (and webhook kubeconfigs) is rewritten and the API server restarted with it"},
	{Path: "spec.controlPlane.apiServer.extraVolumes", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentAPIServer}, Why: "the API server's manifest is regenerated by kubeadm with the new volumes and the API server restarted"},
	{Path: "spec.security", Effect: InPlace, Phases: []string{PhaseCompliance}, Why: "the profile's checks are evaluated again on the live node and the report records the new verdicts; the flags, kubelet settings and kernel parameters a profile defaults change with their own fields, in their own phases"},
	{Path: "spec.controlPlane.controllerManager", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentControllerManager}, Why: "the controller manager's manifest is regenerated by kubeadm and the component restarted"},
	{Path: "spec.controlPlane.scheduler", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentScheduler}, Why: "the scheduler's manifest is regenerated by kubeadm and the component restarted"},
	{Path: "spec.controlPlane.controllerManager.extraVolumes", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentControllerManager}, Why: "the controller manager's manifest is regenerated by kubeadm with the new volumes and the component restarted"},
	{Path: "spec.controlPlane.scheduler.extraVolumes", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentScheduler}, Why: "the scheduler's manifest is regenerated by kubeadm with the new volumes and the component restarted"},
	{Path: "spec.controlPlane.etcd", Effect: Refused, Why: "the etcd topology (local or external) cannot change in place" + replace},
	{Path: "spec.controlPlane.etcd.local", Effect: Refused, Why: "the etcd topology (local or external) cannot change in place" + replace},
	{Path: "spec.controlPlane.etcd.local.dataDir", Effect: Refused, Why: "the etcd member's data would be left behind" + replace},
	{Path: "spec.controlPlane.etcd.local.extraArgs", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentEtcd}, Why: "the etcd manifest is regenerated by kubeadm and the member restarted"},
	{Path: "spec.controlPlane.etcd.local.serverCertSANs", Effect: Refused, Why: "kubeadm renews etcd's certificates with the names they have"},
	{Path: "spec.controlPlane.etcd.local.peerCertSANs", Effect: Refused, Why: "kubeadm renews etcd's certificates with the names they have"},
	{Path: "spec.controlPlane.etcd.external", Effect: Refused, Why: "the etcd topology (local or external) cannot change in place" + replace},
	{Path: "spec.controlPlane.etcd.external.endpoints", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentAPIServer}, Why: "the API server's manifest is regenerated with the new etcd endpoints"},
	{Path: "spec.controlPlane.etcd.external.caFile", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentAPIServer}, Why: "the API server's manifest is regenerated with the new etcd client files"},
	{Path: "spec.controlPlane.etcd.external.certFile", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentAPIServer}, Why: "the API server's manifest is regenerated with the new etcd client files"},
	{Path: "spec.controlPlane.etcd.external.keyFile", Effect: InPlace, Phases: []string{PhaseControlPlane + "/" + ComponentAPIServer}, Why: "the API server's manifest is regenerated with the new etcd client files"},
	{Path: "spec.controlPlane.pki", Effect: Refused, Why: "the certificates directory and key algorithm are in every manifest and certificate" + replace},
	{Path: "spec.controlPlane.pki.dir", Effect: BootstrapOnly, Why: "the CA set is imported once, at bootstrap"},
	{Path: "spec.controlPlane.pki.certificatesDir", Effect: Refused, Why: "the certificates directory is in every manifest and kubeconfig" + replace},
	{Path: "spec.controlPlane.pki.renewBefore", Effect: InPlace, Phases: []string{PhaseCerts}, Why: "the next certs-renew phase renews what expires within the new window"},
	{Path: "spec.controlPlane.pki.encryptionAlgorithm", Effect: Refused, Why: "the key algorithm of the cluster's CAs is fixed" + replace},
	{Path: "spec.controlPlane.certificateKey", Effect: BootstrapOnly, Why: "the certificate key decrypts the shared certificates once, at a control-plane join"},
	{Path: "spec.controlPlane.bootstrapTokens", Effect: BootstrapOnly, Why: "bootstrap tokens are created once, at init; manage later ones with `kubeadm token` or Cluster API"},
	{Path: "spec.controlPlane.runtime", Effect: Refused, Why: "moving the control plane between static pods and systemd units is not an in-place change" + replace},
	{Path: "spec.controlPlane.binaries", Effect: InPlace, Phases: []string{PhaseControlPlane}, Why: "the Systemd runtime's component binaries are replaced one component at a time"},
	{Path: "spec.join", Effect: BootstrapOnly, Why: "the join settings are used once, when the node joins"},
	{Path: "spec.join.apiServerEndpoint", Effect: Refused, Why: "the endpoint names the cluster the node joined; a node moves to another cluster only by a new bootstrap"},
	{Path: "spec.node.name", Effect: Refused, Why: "the Node's name is its identity in the cluster and in its certificates" + replace},
	{Path: "spec.node.criSocket", Effect: Refused, Why: "the kubelet's container runtime socket is in the Node's annotations and the kubelet's flags" + replace},
	{Path: "spec.node.labels", Effect: Refused, Why: "labels are applied when the Node registers; change them on the Node (kubectl label) or through Cluster API"},
	{Path: "spec.node.taints", Effect: Refused, Why: "taints are applied when the Node registers; change them on the Node (kubectl taint) or through Cluster API"},
	{Path: "spec.node.ignorePreflightErrors", Effect: RunOnly, Why: "passed to kubeadm's upgrade preflight"},
	{Path: "spec.node.kubelet.extraArgs", Effect: Refused, Why: "kubeadm writes the kubelet's flags once (kubeadm-flags.env); move the setting to spec.node.kubelet.config"},
	{Path: "spec.node.kubelet.config", Effect: InPlace, Phases: []string{PhaseKubelet}, Disrupts: true, Why: "the kubelet's configuration is rewritten by kubeadm's kubelet-config phase with the new patch and the kubelet restarted"},
	{Path: "spec.host.sysctl", Effect: InPlace, Phases: []string{PhaseSysctl}, Why: "set live and persisted, as at bootstrap"},
	{Path: "spec.host.kernelModules", Effect: InPlace, Phases: []string{PhaseKernelModules}, Why: "loaded and persisted, as at bootstrap (a module no longer listed stays loaded)"},
	{Path: "spec.host.files", Effect: InPlace, Phases: []string{PhaseFiles, PhaseKubelet}, Why: "written as at bootstrap; a new kubelet binary (a file whose path ends in /kubelet) restarts the kubelet"},
	{Path: "spec.host.containerd", Effect: InPlace, Phases: []string{PhaseContainerd}, Disrupts: true, Why: "containerd's configuration is rewritten and containerd restarted (only when its configuration changed)"},
	{Path: "spec.host.staticPods", Effect: InPlace, Phases: []string{PhaseStaticPods}, Why: "the manifests are rewritten; the kubelet restarts the changed pods"},
	{Path: "spec.host.domainJoin", Effect: Refused, Why: "domain membership is decided once (a Windows machine changes domain only by a new bootstrap)"},
	{Path: "spec.report", Effect: RunOnly, Why: "where this run's outcome report goes"},
}

// Fields returns the field table, in the spec's order.
func Fields() []Field { return slices.Clone(fields) }

// Lookup returns the row of the field at path (JSON names, "." between
// them, list indexes and map keys removed): the row of the path itself or
// of its nearest parent with one; false when none has.
func Lookup(path string) (Field, bool) {
	for p := path; p != ""; {
		for _, f := range fields {
			if f.Path == p {
				return f, true
			}
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return Field{}, false
}

// typedSecurityPhases apply a change of a typed API-server security
// setting: its files, then the API server.
var typedSecurityPhases = []string{PhaseAPIServerConfig, PhaseControlPlane + "/" + ComponentAPIServer}

// hasRowsBelow says whether some row is below path: the diff compares
// such a field field by field.
func hasRowsBelow(path string) bool {
	for _, f := range fields {
		if strings.HasPrefix(f.Path, path+".") {
			return true
		}
	}
	return false
}
