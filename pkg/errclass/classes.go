package errclass

// Class is an error class of the outcome report.
type Class string

// The error classes. A new class is a constant here and a row of registry
// below; docs/report.md's table is generated from the registry.
const (
	// InvalidSpec: the spec or command line is invalid; nothing changed.
	InvalidSpec Class = "InvalidSpec"
	// PreflightFailed: a kubeadm preflight check failed.
	PreflightFailed Class = "PreflightFailed"
	// PayloadUnavailable: a referenced file, secret or URL could not be read.
	PayloadUnavailable Class = "PayloadUnavailable"
	// VerificationFailed: a digest, signature or sealed envelope did not verify.
	VerificationFailed Class = "VerificationFailed"
	// HostPreparationFailed: writing files, sysctl or kernel modules failed.
	HostPreparationFailed Class = "HostPreparationFailed"
	// ContainerRuntimeUnavailable: containerd is not running or not answering on the CRI socket.
	ContainerRuntimeUnavailable Class = "ContainerRuntimeUnavailable"
	// KubeletFailed: the kubelet did not start or did not become healthy.
	KubeletFailed Class = "KubeletFailed"
	// ControlPlaneUnhealthy: the API server or another control-plane component did not become healthy.
	ControlPlaneUnhealthy Class = "ControlPlaneUnhealthy"
	// EtcdUnhealthy: the local etcd member did not start or join.
	EtcdUnhealthy Class = "EtcdUnhealthy"
	// DiscoveryFailed: cluster discovery failed (wrong CA cert hash, bad token, cluster-info unreadable).
	DiscoveryFailed Class = "DiscoveryFailed"
	// TLSBootstrapFailed: the kubelet's TLS bootstrap (CSR) failed.
	TLSBootstrapFailed Class = "TLSBootstrapFailed"
	// DomainJoinFailed: joining the Active Directory domain failed (credentials, domain controller, computer account).
	DomainJoinFailed Class = "DomainJoinFailed"
	// RebootRequired: a step (the Windows domain join) finished and the machine must reboot before the run continues.
	RebootRequired Class = "RebootRequired"
	// DrainFailed: cordoning or draining the node before an upgrade, or uncordoning it after, failed.
	DrainFailed Class = "DrainFailed"
	// RolledBack: an upgraded control-plane component did not become healthy and was put back as it was.
	RolledBack Class = "RolledBack"
	// ComplianceFailed: a check of spec.security.profile failed on the node made, and the spec does not waive it.
	ComplianceFailed Class = "ComplianceFailed"
	// Timeout: a bounded wait ran out (endpoint unreachable, component too slow).
	Timeout Class = "Timeout"
	// Interrupted: the run was stopped by a signal (SIGTERM, SIGINT).
	Interrupted Class = "Interrupted"
	// Internal: a bug or an unclassified failure.
	Internal Class = "Internal"
)

// Info is one error class with the words the report and its documentation
// use for it.
type Info struct {
	// Class is the class word, as the report's errorClass carries it.
	Class Class
	// Hint says what to check first, in one sentence for a person: the
	// report's hint when neither the error nor classification gives a
	// more precise one (DefaultHint).
	Hint string
	// Means is the documentation line: what the class means, in Markdown,
	// the "means" column of docs/report.md's class table.
	Means string
	// Check says what to check, in Markdown: the "what to check" column of
	// docs/report.md's class table.
	Check string
}

// registry is every class, once, in the order docs/report.md lists them.
// TestRegistryHasEveryConstant fails when a Class constant has no row, and
// TestDocTable when docs/report.md's table differs from these rows.
var registry = []Info{
	{
		Class: InvalidSpec,
		Hint:  "Fix the machine spec: run `machineadm config validate -f SPEC`, which lists every invalid field with its path.",
		Means: "The spec (or the command line) is invalid, or the embedded kubeadm refuses the configuration derived from it. Found before any phase runs: nothing on the host was changed but this report; exit code 2.",
		Check: "`machineadm config validate -f SPEC` lists every invalid field with its path.",
	},
	{
		Class: PreflightFailed,
		Hint:  "Read the [ERROR ...] lines of the log tail; fix the host or list the check in spec.node.ignorePreflightErrors if it is safe.",
		Means: "A kubeadm preflight check failed (`[ERROR NAME]` lines), or a control-plane join into a cluster without a stable `controlPlaneEndpoint`.",
		Check: "The hint names the failed checks and quotes the first. Fix the host (ports in use, swap, missing kernel modules, leftover `/etc/kubernetes` files), or list a check in `spec.node.ignorePreflightErrors` when it is safe.",
	},
	{
		Class: PayloadUnavailable,
		Hint:  "Check that every file, secret and URL the spec references exists and is readable from this machine.",
		Means: "A file, secret or URL the spec references could not be read; or, on a control-plane join, the shared certificates could not be downloaded from the `kubeadm-certs` Secret.",
		Check: "The path or URL in the error; that secret files exist (mode `0600`). For certificates: `spec.controlPlane.certificateKey` must be the key the first control plane uploaded with, and the upload must be less than 2 hours old (the Secret expires).",
	},
	{
		Class: VerificationFailed,
		Hint:  "The downloaded content differs from its pinned digest or signature: check the source and the sha256 in the spec.",
		Means: "A downloaded payload did not match its pinned `sha256` digest (or signature); or the spec is sealed and its envelope did not open with this machine's identity, or was sealed for another node (recorded before any phase, exit code 2: see [sealed-secrets.md](sealed-secrets.md)).",
		Check: "The source URL serves what was pinned; re-pin the digest if the content changed on purpose. Never skip verification. For a sealed spec: `--identity`, and `machineadm unseal --check` where it was sealed.",
	},
	{
		Class: HostPreparationFailed,
		Hint:  "Check the failed host step's message: file paths, permissions, sysctl names and kernel modules available on this OS.",
		Means: "Writing files, sysctl parameters, kernel modules, static pod manifests, certificates or kubeconfig files failed.",
		Check: "The failed phase's message: permissions, read-only paths, sysctl keys and kernel modules that this OS kernel has, CA files in `spec.controlPlane.pki.dir`.",
	},
	{
		Class: ContainerRuntimeUnavailable,
		Hint:  "Check that containerd runs and answers on spec.node.criSocket: `systemctl status containerd`, `crictl info`.",
		Means: "containerd is not running or does not answer on the CRI socket (kubeadm's `CRI` check, `container runtime is not running`, a refused `containerd.sock`), or machineadm could not restart it.",
		Check: "`systemctl status containerd`, `journalctl -u containerd`, `crictl info`; that `spec.node.criSocket` is the socket containerd listens on.",
	},
	{
		Class: KubeletFailed,
		Hint:  "Check the kubelet: `systemctl status kubelet`, `journalctl -u kubelet`; cgroup driver and swap are common causes.",
		Means: "The kubelet did not become healthy on `http://127.0.0.1:10248/healthz` within kubeadm's wait.",
		Check: "`systemctl status kubelet`, `journalctl -u kubelet`: cgroup driver (must match containerd's), swap, `failCgroupV1` on cgroup v1 hosts, the kubelet config in `spec.node.kubelet`.",
	},
	{
		Class: ControlPlaneUnhealthy,
		Hint:  "Check the control-plane static pods: `crictl ps -a`, `crictl logs <container>`, and the API server's certificates and flags.",
		Means: "kube-apiserver, kube-controller-manager or kube-scheduler did not report healthy (`wait-control-plane`), or a later init phase could not talk to the API server.",
		Check: "`crictl ps -a` and `crictl logs <container>` of the failing component; its certificates and flags (`spec.controlPlane.apiServer.extraArgs`), the advertise address and port.",
	},
	{
		Class: EtcdUnhealthy,
		Hint:  "Check the etcd member: `crictl logs` of the etcd container, the data directory, peer ports 2379/2380 and the etcd certificates.",
		Means: "The local etcd member did not start, or could not join the etcd cluster, or the cluster is unhealthy.",
		Check: "`crictl logs` of the etcd container; ports 2379/2380 between control-plane nodes; the etcd data directory (left over from an earlier cluster?); the etcd CA in `spec.controlPlane.pki.dir`.",
	},
	{
		Class: DiscoveryFailed,
		Hint:  "Check spec.join: the CA cert hash must match the cluster CA (`machineadm pki init` prints it) and the token must exist and not be expired.",
		Means: "The join could not trust the cluster: the CA does not match `spec.join.caCertHashes` (\"none of the public keys … are pinned\"), the token is unknown or expired (no JWS signature for its ID), the endpoint is not a kubeadm cluster, or its certificate is untrusted (`x509:`). A join's `wait-cluster-info` phase finds these before kubeadm runs: a signature that does not verify with the token, a CA the pins do not name, a server certificate not from the pinned CA.",
		Check: "`spec.join.caCertHashes`: the `sha256:` hash of the cluster CA's public key, as `machineadm pki init` prints it; `spec.join.token`: create a new one on a control-plane node; `spec.join.apiServerEndpoint` points at this cluster.",
	},
	{
		Class: TLSBootstrapFailed,
		Hint:  "Check that the token may create CSRs and that the controller manager approves and signs them (`kubectl get csr`).",
		Means: "The kubelet did not get its client certificate (its CSR was not approved and signed in time), or a Ready Node with the same name already exists.",
		Check: "`kubectl get csr`: the token's group must be allowed to create CSRs and be auto-approved (the `bootstrap-token` phase of the first control plane sets this up); the controller manager must run with the cluster CA's key. For a duplicate name: delete the old Node or change `spec.node.name`.",
	},
	{
		Class: DomainJoinFailed,
		Hint:  "Check spec.host.domainJoin: the domain's DNS name resolves and its domain controller answers (LDAP 389, Kerberos 88), the account may join computers to the OU, and the password or offline-join blob is current.",
		Means: "Joining the Active Directory domain (`spec.host.domainJoin`) failed: wrong user name or password, an expired or foreign offline-join blob, no domain controller found or reachable, or the account may not create the computer account in the OU. On Linux the message carries `adcli`'s own error (never the password).",
		Check: "That the domain's DNS name resolves to its domain controllers (SRV `_ldap._tcp.DOMAIN`) or `domainController` is right; LDAP 389 and Kerberos 88 reach it; the account's password and its right to join computers to `organizationalUnit`; for a blob: create a new one with `djoin /provision` (see [windows.md](windows.md)).",
	},
	{
		Class: RebootRequired,
		Hint:  "The machine must reboot to finish the domain join; the first-boot script reboots and runs `machineadm bootstrap` again, which resumes after the join.",
		Means: "Not a failure: the Windows domain join finished and takes effect only after a reboot. The `domain-join` phase is recorded with this class and the run stops (exit code 1); the first-boot script sees the class in the report, reboots, and runs `machineadm bootstrap` again, which finds the machine joined and resumes after the join (see [windows.md](windows.md)).",
		Check: "Nothing, unless the machine does not come back: then the first-boot scheduled task (`machineadm-bootstrap`) and its log.",
	},
	{
		Class: DrainFailed,
		Hint:  "Check what kept the drain from finishing: a PodDisruptionBudget that allows no eviction, a pod without a controller, or a credential that may not evict (--kubeconfig); fix it, or run `machineadm upgrade` again with --skip-drain.",
		Means: "`machineadm upgrade` could not cordon and drain the node within `--drain-timeout` (evictions through the Eviction API refused by a PodDisruptionBudget, pods that do not terminate), or could not uncordon it after the upgrade. Nothing of the upgrade ran after a failed drain.",
		Check: "`kubectl get pdb -A` and the pods still on the node (`kubectl get pods -A --field-selector spec.nodeName=NODE`); the drain credential (`--kubeconfig`, default `/etc/kubernetes/admin.conf`, which only control planes have). Rerun `machineadm upgrade`: it resumes at the drain.",
	},
	{
		Class: RolledBack,
		Hint:  "The new settings made the component unhealthy and it was put back as it was: read the component's log (`crictl logs`) in the log tail, fix its settings in the spec and run `machineadm upgrade` again.",
		Means: "An upgraded control-plane component (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) did not become healthy with its new manifest or unit; machineadm put the backup back and the component runs as before, except that after `certs-renew`'s restart it reads the renewed certificates, which stay. The failed phase names the component.",
		Check: "The component's log (`crictl ps -a`, `crictl logs`), the flags the spec adds (`spec.controlPlane.*.extraArgs`); the backup in `/etc/kubernetes/tmp/machineadm-backup-*`.",
	},
	{
		Class: ComplianceFailed,
		Hint:  "Read the report's compliance section: each FAIL names the check, the file or flag found and the value wanted; fix the spec value that overrides the profile, or waive the check in spec.security.waivers with a reason.",
		Means: "The node was made, but a check of `spec.security.profile` that concerns it failed (FAIL in the report's `compliance` section) and `spec.security.waivers` does not waive it. The node may be in the cluster; it is not compliant.",
		Check: "The report's `compliance.checks` entries with verdict `FAIL`: each names the benchmark ID, what was found and what is wanted. Usually a spec value overrides the profile's default (an `extraArgs` flag, a kubelet configuration field); docs/compliance.md says how machineadm satisfies each ID.",
	},
	{
		Class: Timeout,
		Hint:  "Check that the endpoint is reachable from this machine (address, port, firewall, load balancer) and the timeout is long enough.",
		Means: "A bounded wait ran out: most often the API server endpoint did not answer during discovery (connection refused, no route, i/o timeout) within `spec.join.timeout`.",
		Check: "From the machine: can it reach `spec.join.apiServerEndpoint` (address, port 6443, firewall, load balancer health)? Is the timeout long enough for the first control plane to come up?",
	},
	{
		Class: Interrupted,
		Hint:  "The run was stopped by a signal; run `machineadm bootstrap` again: it continues from where the host is.",
		Means: "The run was stopped by SIGTERM or SIGINT; the phase that was running is marked `Failed`. Also the class of a provisional report: the run had not ended when it was written — it was killed (SIGKILL, out of memory, power loss) or is still running ([Unfinished runs](#unfinished-runs)).",
		Check: "Who stopped it (shutdown, a systemd timeout, an operator). Run the interrupted command again — the hint names it (`machineadm bootstrap`, `machineadm prepare`): it resumes at the first phase that did not finish.",
	},
	{
		Class: Internal,
		Hint:  "This is a machineadm bug or an unclassified failure: read the error and the log tail, and report it with this report attached.",
		Means: "A machineadm bug (a panic — its stack is in the log tail) or a failure nothing above recognises.",
		Check: "Read the error and the log tail; please report it with the report attached (it holds no secrets).",
	},
}

// Infos returns every class's row, in documentation order.
func Infos() []Info { return append([]Info(nil), registry...) }

// All returns every error class, in documentation order.
func All() []Class {
	cs := make([]Class, len(registry))
	for i, r := range registry {
		cs[i] = r.Class
	}
	return cs
}

// lookup returns c's row; ok is false for an unknown class.
func lookup(c Class) (info Info, ok bool) {
	for _, r := range registry {
		if r.Class == c {
			return r, true
		}
	}
	return Info{}, false
}

// Known reports whether c is one of the fixed classes.
func (c Class) Known() bool {
	_, ok := lookup(c)
	return ok
}

// DefaultHint returns the generic hint for class c ("" for an unknown class).
func DefaultHint(c Class) string {
	r, _ := lookup(c)
	return r.Hint
}
