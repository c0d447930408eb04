package phases

import (
	"context"
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// kubeadmUpgradePhase is kubeadm's `upgrade apply` (the first control
// plane) or `upgrade node` (every other node), each of its phases a
// sub-phase under kubeadm's name.
func kubeadmUpgradePhase(cfg *machineadm.MachineBootstrapConfig) Phase {
	verb := "node"
	if FirstControlPlane(cfg) {
		verb = "apply"
	}
	p := Phase{Name: upgrade.PhaseKubeadm, Short: "kubeadm upgrade " + verb + "'s phases, in-process", Class: errclass.ControlPlaneUnhealthy}
	for _, k := range KubeadmUpgradePhases(verb) {
		leaf := kubeadmUpgradeLeaf(cfg, k)
		if n := len(p.Phases); n > 0 && len(leaf.Phases) > 0 && p.Phases[n-1].Name == leaf.Name {
			// A sibling of the previous sub-phase (addon/kube-proxy
			// after addon/coredns) joins its parent.
			p.Phases[n-1].Phases = append(p.Phases[n-1].Phases, leaf.Phases...)
			continue
		}
		p.Phases = append(p.Phases, leaf)
	}
	return p
}

// systemdRuntime says whether cfg's control plane runs as systemd units.
func systemdRuntime(cfg *machineadm.MachineBootstrapConfig) bool {
	cp := cfg.Spec.ControlPlane
	return cp != nil && cp.Runtime == machineadm.RuntimeSystemd
}

// FirstControlPlane says whether cfg is the cluster's first control plane
// (role ControlPlane, action Init), where kubeadm's `upgrade apply` runs.
func FirstControlPlane(cfg *machineadm.MachineBootstrapConfig) bool {
	return cfg.Spec.Role == machineadm.RoleControlPlane && cfg.Spec.Action == machineadm.ActionInit
}

// KubeadmUpgradePhase is one phase of kubeadm's upgrade apply or node
// (v1.37), by kubeadm's name ("addon/coredns").
type KubeadmUpgradePhase struct {
	Name, Short string
	Class       errclass.Class
	// Hint is the hint of a failure of the phase that Class classifies
	// (day2.UpgradeRunner.Run, the workflow's fallback): what kubeadm's
	// phase needed and what to do. A hint the error carries from where it
	// was born, or one of run.Classify's message rules, is more precise
	// and is kept.
	Hint string
	// SystemdHint, when set, is Hint on a control plane of runtime
	// Systemd, where the phase does something else.
	SystemdHint string
}

// HintFor is k's hint for cfg's node (SystemdHint on a Systemd control
// plane, where set).
func (k KubeadmUpgradePhase) HintFor(cfg *machineadm.MachineBootstrapConfig) string {
	if k.SystemdHint != "" && systemdRuntime(cfg) {
		return k.SystemdHint
	}
	return k.Hint
}

// KubeadmUpgradePhases returns kubeadm v1.37's `upgrade apply` (verb
// "apply") or `upgrade node` phases (cmd/kubeadm/app/cmd/upgrade), leaves
// in order, each with the hint of its failure (kubeadm's
// cmd/phases/upgrade and the code they call say what each reads and
// writes).
func KubeadmUpgradePhases(verb string) []KubeadmUpgradePhase {
	cp, pre := errclass.ControlPlaneUnhealthy, errclass.PreflightFailed
	if verb == "apply" {
		return []KubeadmUpgradePhase{
			{"preflight", "kubeadm's upgrade preflight checks and version skew policy", pre, hintKubeadmPreflightApply, ""},
			{"control-plane", "Upgrade the control plane (etcd, then each component; kubeadm backs up and rolls back)", cp, hintKubeadmControlPlane, hintKubeadmControlPlaneSystemd},
			{"upload-config/kubeadm", "Upload the kubeadm ClusterConfiguration to the kubeadm-config ConfigMap", cp, hintKubeadmUploadKubeadm, ""},
			{"upload-config/kubelet", "Upload the kubelet configuration to the kubelet-config ConfigMap", cp, hintKubeadmUploadKubelet, ""},
			{"kubeconfig", "Upgrade the kubeconfig files", cp, hintKubeadmKubeconfig, ""},
			{"kubelet-config", "Upgrade the kubelet configuration of this node", errclass.KubeletFailed, hintKubeadmKubeletConfig, ""},
			{"bootstrap-token", "Configure the bootstrap token and cluster-info RBAC rules", cp, hintKubeadmBootstrapToken, ""},
			{"addon/coredns", "Upgrade the CoreDNS addon", cp, hintKubeadmCoreDNS, ""},
			{"addon/kube-proxy", "Upgrade the kube-proxy addon", cp, hintKubeadmKubeProxy, ""},
			{"post-upgrade", "kubeadm's post-upgrade tasks", cp, hintKubeadmPostUpgrade, ""},
		}
	}
	return []KubeadmUpgradePhase{
		{"preflight", "kubeadm's upgrade node preflight checks", pre, hintKubeadmPreflightNode, ""},
		{"control-plane", "Upgrade the control plane of this node, if it has one (kubeadm backs up and rolls back)", cp, hintKubeadmControlPlane, hintKubeadmControlPlaneSystemd},
		{"kubeconfig", "Upgrade the kubeconfig files", cp, hintKubeadmKubeconfig, ""},
		{"kubelet-config", "Upgrade the kubelet configuration of this node", errclass.KubeletFailed, hintKubeadmKubeletConfig, ""},
		{"addon/coredns", "Upgrade the CoreDNS addon (once every control plane is upgraded)", cp, hintKubeadmCoreDNS, ""},
		{"addon/kube-proxy", "Upgrade the kube-proxy addon (once every control plane is upgraded)", cp, hintKubeadmKubeProxy, ""},
		{"post-upgrade", "kubeadm's post-upgrade tasks", cp, hintKubeadmPostUpgrade, ""},
	}
}

// The hints of kubeadm v1.37's upgrade phases (KubeadmUpgradePhases),
// from what each phase does in kubeadm's code: cmd/phases/upgrade/{apply,
// node}/*.go and the code they call, phases/upgrade (preflight, health,
// policy, staticpods, postupgrade), phases/uploadconfig,
// phases/kubelet, phases/bootstraptoken, phases/addons/{dns,proxy}.
const (
	// preflight.go: RunRootCheckOnly, RunUpgradeChecks,
	// RunCoreDNSMigrationCheck, CheckClusterHealth, then
	// EnforceVersionPolicies (its Mandatory and, without --force,
	// Skippable errors, which no ignored check waives), then
	// RunPullImagesCheck.
	hintKubeadmPreflightApply = "kubeadm's upgrade apply preflight failed. A failed check is an [ERROR NAME] line of the log tail (IsPrivilegedUser, SystemVerification, ContainerRuntimeVersion, CoreDNSUnsupportedPlugins, CoreDNSMigration, CreateJob: a Job kubeadm creates in kube-system must complete, ControlPlaneNodesReady, StaticPodManifest, ImagePull): fix the cause, or list the check in spec.node.ignorePreflightErrors if it is safe. kubeadm's version skew policy is not a check and cannot be ignored (machineadm does not pass --force): spec.kubernetes.version must be a stable release of the embedded kubeadm's minor version, not newer than it (`machineadm version`), at most one minor version above the cluster's API server, and no kubelet in the cluster more than 3 minor versions older. Then run `machineadm upgrade` again."
	// node/preflight.go: no version policy, images only on a control plane.
	hintKubeadmPreflightNode = "kubeadm's upgrade node preflight failed. A failed check is an [ERROR NAME] line of the log tail (IsPrivilegedUser, SystemVerification, ContainerRuntimeVersion and, on a control plane, ImagePull): fix the host or containerd, or list the check in spec.node.ignorePreflightErrors if it is safe, then run `machineadm upgrade` again."
	// PerformStaticPodUpgrade: etcd (local, etcdUpgrade), the
	// certificates (certificateRenewal), each manifest and the wait for
	// its pod, rollbackOldManifests and rollbackEtcdData from the
	// backups of NewKubeStaticPodPathManagerUsingTempDirs.
	hintKubeadmControlPlane = "kubeadm's control-plane phase upgrades the local etcd, renews the components' certificates and replaces each static pod manifest, waiting for the kubelet to run it, and puts the manifests (and etcd's data) back from /etc/kubernetes/tmp/kubeadm-backup-manifests-* and kubeadm-backup-etcd-* when one does not come up. Check the control-plane static pods: `crictl ps -a`, `crictl logs <container>`, the API server's certificates and flags (spec.controlPlane.*.extraArgs); then run `machineadm upgrade` again."
	// upgradeSystemdUnits: the runtime's upgrader in kubeadm's place;
	// its own errors carry their unit's hint (systemdUpgrader).
	hintKubeadmControlPlaneSystemd = "On the Systemd runtime this phase replaces the control-plane units instead of kubeadm's static pods (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, one at a time, each rolled back when it does not become healthy): check `systemctl status` and `journalctl -u etcd -u kube-apiserver -u kube-controller-manager -u kube-scheduler`, the binaries (spec.controlPlane.binaries, spec.host.files) and the flags the spec gives them; then run `machineadm upgrade` again."
	// uploadconfig.UploadConfiguration: CreateOrMutate the ConfigMap
	// (create, get, update), CreateOrUpdate the Role and RoleBinding.
	hintKubeadmUploadKubeadm = "kubeadm's upload-config/kubeadm phase stores the upgraded ClusterConfiguration in the kubeadm-config ConfigMap, then the Role and RoleBinding kubeadm:nodes-kubeadm-config that let nodes read it: check that the API server answers and that /etc/kubernetes/admin.conf may create, get and update ConfigMaps, Roles and RoleBindings in kube-system (`kubectl -n kube-system get configmap kubeadm-config`), then run `machineadm upgrade` again."
	// kubeletphase.CreateConfigMap: CreateOrUpdate the ConfigMap, the
	// Role and the RoleBinding (a Role that grants get needs get).
	hintKubeadmUploadKubelet = "kubeadm's upload-config/kubelet phase stores the cluster's kubelet configuration in the kubelet-config ConfigMap, then the Role and RoleBinding kubeadm:kubelet-config that let nodes read it: check that the API server answers and that /etc/kubernetes/admin.conf may create, get and update ConfigMaps, Roles and RoleBindings in kube-system (`kubectl -n kube-system get configmap kubelet-config`), then run `machineadm upgrade` again."
	// UpdateKubeletKubeconfigServer: kubelet.conf only, then
	// TryRestartKubelet; upgrade node skips it on a worker.
	hintKubeadmKubeconfig = "kubeadm's kubeconfig phase points /etc/kubernetes/kubelet.conf at this node's own API server (spec.controlPlane.advertiseAddress and bindPort) where it names spec.kubernetes.controlPlaneEndpoint, then restarts the kubelet: check that kubelet.conf is a kubeconfig whose current context names a cluster, that it and /etc/kubernetes are writable, and that those endpoints are valid; then run `machineadm upgrade` again."
	// WriteKubeletConfigFiles: backup, instance-config.yaml, config.yaml
	// from the data's kubelet component configuration and patches.
	hintKubeadmKubeletConfig = "kubeadm's kubelet-config phase backs up /var/lib/kubelet/config.yaml to /etc/kubernetes/tmp/kubeadm-kubelet-config-*, writes /var/lib/kubelet/instance-config.yaml when it is missing, and writes config.yaml from the kubelet-config ConfigMap with the spec.node.kubelet.config patch: check that config.yaml exists, that those paths are writable, and that the file the error names is valid YAML; the kubelet restarts only later, in the kubelet phase. Then run `machineadm upgrade` again."
	// bootstraptoken/node (tlsbootstrap.go) and clusterinfo's
	// CreateClusterInfoRBACRules, each CreateOrUpdate.
	hintKubeadmBootstrapToken = "kubeadm's bootstrap-token phase creates or updates the RBAC rules that let bootstrap tokens join and nodes renew their certificates: the ClusterRole kubeadm:get-nodes, the ClusterRoleBindings kubeadm:get-nodes, kubeadm:kubelet-bootstrap, kubeadm:node-autoapprove-bootstrap, kubeadm:node-autoapprove-certificate-rotation and kubeadm:apiserver-kubelet-client, and the Role and RoleBinding kubeadm:bootstrap-signer-clusterinfo in kube-public: check that the API server answers and that /etc/kubernetes/admin.conf may create and update those (and holds the rights they grant), then run `machineadm upgrade` again."
	// upgradephases addons.go: shouldUpgradeAddons
	// (UnupgradedControlPlaneInstances; SystemdAddons on the Systemd
	// runtime), dnsaddon.EnsureDNSAddon.
	hintKubeadmCoreDNS = "kubeadm's addon/coredns phase creates or updates CoreDNS: in kube-system the ConfigMap coredns (its Corefile migrated), the Deployment coredns, the Service kube-dns and the ServiceAccount coredns, and the ClusterRole and ClusterRoleBinding system:coredns; check that the API server answers and that /etc/kubernetes/admin.conf may get, list, create and update those. kubeadm skips the addon until every control plane runs the new version (it compares their kube-apiserver Pods in kube-system; on the Systemd runtime machineadm asks each API server in the EndpointSlice default/kubernetes), so the last control plane upgraded upgrades it. Then run `machineadm upgrade` again."
	// upgradephases addons.go, proxyaddon.EnsureProxyAddon.
	hintKubeadmKubeProxy = "kubeadm's addon/kube-proxy phase creates or updates kube-proxy: in kube-system the ConfigMap, DaemonSet, ServiceAccount, Role and RoleBinding kube-proxy, and the ClusterRoleBinding kubeadm:node-proxier; check that the API server answers and that /etc/kubernetes/admin.conf may create and update those. kubeadm skips the addon until every control plane runs the new version (it compares their kube-apiserver Pods in kube-system; on the Systemd runtime machineadm asks each API server in the EndpointSlice default/kubernetes), so the last control plane upgraded upgrades it. Then run `machineadm upgrade` again."
	// postupgrade.go: RemoveKubeletArgsFromFile with no flags returns
	// at once; what fails is the data its workflow runner builds
	// (FetchInitConfigurationFromCluster: the ConfigMaps,
	// GetNodeRegistration, and GetAPIEndpoint's mirror Pod on a
	// static-pod control plane).
	hintKubeadmPostUpgrade = "kubeadm v1.37's post-upgrade phase has no kubelet flag to remove and changes nothing: a failure here is kubeadm building its upgrade data, in a run that starts or resumes at this phase. Check that the API server answers and that the credential (/etc/kubernetes/admin.conf; kubelet.conf on a worker) may read the kubeadm-config, kubelet-config and kube-proxy ConfigMaps in kube-system, this node's Node (named by /etc/kubernetes/kubelet.conf) and, on a static-pod control plane, this node's kube-apiserver mirror Pod in kube-system with its advertise-address annotation; that /var/lib/kubelet/instance-config.yaml is readable; then run `machineadm upgrade` again."
)

func kubeadmUpgradeLeaf(cfg *machineadm.MachineBootstrapConfig, k KubeadmUpgradePhase) Phase {
	parent, leaf, nested := strings.Cut(k.Name, "/")
	name := k.Name
	if nested {
		name = leaf
	}
	ph := Phase{
		Name: name, Short: k.Short, Class: k.Class, Hint: k.HintFor(cfg),
		Run: func(ctx context.Context, d *Data) (Result, error) {
			_, skip, err := planned(d, upgrade.PhaseKubeadm)
			if skip != nil || err != nil {
				return resultOf(skip), err
			}
			if k.Name == "control-plane" && systemdRuntime(d.Config) {
				// kubeadm writes static pod manifests: the units are
				// replaced here instead, where kubeadm upgrades its
				// control plane (before the kubeadm-config upload and the
				// addons); the control-plane phase then finds them done.
				return upgradeSystemdUnits(ctx, d)
			}
			if d.DryRun {
				return Result{Changed: true, Changes: []string{"would run kubeadm upgrade phase " + k.Name + " to " + d.Upgrade.Plan.To}}, nil
			}
			if err := d.Upgrade.cluster().KubeadmPhase(ctx, d, k.Name); err != nil {
				return Result{}, err
			}
			return Result{Changed: true, Message: "kubeadm " + k.Name + " done"}, nil
		},
	}
	if nested {
		return Phase{Name: parent, Short: "kubeadm's " + parent + " phase", Class: k.Class, Phases: []Phase{ph}}
	}
	return ph
}

// upgradeSystemdUnits replaces the Systemd runtime's units in kubeadm's
// order (etcd, kube-apiserver, kube-controller-manager, kube-scheduler),
// one at a time, each healthy (or rolled back) before the next, with the
// runtime's ControlPlaneUpgrader; it stops at the first that fails.
func upgradeSystemdUnits(ctx context.Context, d *Data) (Result, error) {
	if d.DryRun {
		plan := []string{"would replace the units of " + strings.Join(upgrade.ControlPlaneComponents, ", ") + " (Systemd runtime) at " + d.Upgrade.Plan.To + ", one at a time: back each up, wait until it is healthy, roll it back if it is not"}
		if FirstControlPlane(d.Config) {
			// Before kubeadm's upload-config, which then stores the new
			// version with them.
			plan = append(plan, storeSettingsPlan)
		}
		return Result{Changed: true, Changes: plan}, nil
	}
	u := controlPlaneUpgrader(machineadm.RuntimeSystemd)
	if u == nil {
		return Result{}, errclass.New(errclass.Internal, "", fmt.Errorf("no control-plane upgrader for runtime %s in this build", machineadm.RuntimeSystemd))
	}
	var out Result
	for _, c := range upgrade.ControlPlaneComponents {
		r, err := u.UpgradeComponent(ctx, d, c)
		out.Changed = out.Changed || r.Changed
		out.Changes = append(out.Changes, r.Changes...)
		if err != nil {
			return out, err
		}
	}
	if !out.Changed {
		out.Message = "the units already run the spec's binaries and flags"
	}
	return out, nil
}
