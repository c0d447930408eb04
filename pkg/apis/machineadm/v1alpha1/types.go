package v1alpha1

// MachineBootstrapConfig is the whole machine spec: what this machine is in
// its cluster and how its host is prepared. It is the only input of
// `machineadm bootstrap` and `machineadm prepare`; kubeadm configuration is
// derived from it and never written by users.
type MachineBootstrapConfig struct {
	// APIVersion must be "machineadm.io/v1alpha1".
	APIVersion string `json:"apiVersion"`
	// Kind must be "MachineBootstrapConfig".
	Kind string `json:"kind"`
	// Metadata names the spec; the name appears in the outcome report.
	Metadata ObjectMeta `json:"metadata,omitempty"`
	// Spec describes the machine.
	Spec MachineBootstrapSpec `json:"spec"`
}

// ObjectMeta identifies a spec document.
type ObjectMeta struct {
	// Name of the spec, for example the Cluster API Machine name. Optional;
	// when empty the report uses the node name.
	Name string `json:"name,omitempty"`
}

// Role is the part a machine plays in its cluster.
type Role string

// Action is what the bootstrap does to the cluster.
type Action string

const (
	// RoleControlPlane runs the API server, controller manager, scheduler and
	// (with local etcd) an etcd member.
	RoleControlPlane Role = "ControlPlane"
	// RoleWorker runs workloads only.
	RoleWorker Role = "Worker"

	// ActionInit creates a new cluster (`kubeadm init`). Only for the first
	// control-plane node.
	ActionInit Action = "Init"
	// ActionJoin joins an existing cluster (`kubeadm join`), as a control-plane
	// node when the role is ControlPlane, otherwise as a worker.
	ActionJoin Action = "Join"
)

// OS is the operating system a spec is for (spec.os), named as Go's
// GOOS: "linux" or "windows".
type OS string

const (
	// OSLinux is a Linux machine (and every other non-Windows one).
	OSLinux OS = "linux"
	// OSWindows is a Windows machine: a worker, with drive paths, a
	// named-pipe CRI socket and the Windows containerd runtime.
	OSWindows OS = "windows"
)

// MachineBootstrapSpec is the content of a machine spec.
type MachineBootstrapSpec struct {
	// OS is the operating system of the machine the spec is for: linux or
	// windows. It selects the validation rules (which fields have a meaning
	// there), the path syntax (drive paths such as 'C:\ProgramData\x' on
	// Windows) and the OS-dependent defaults (CRI socket, containerd
	// configuration file and runtime, report and sentinel paths), so that
	// any machineadm build validates, seals and renders a spec for either
	// OS. Default: the OS machineadm is built for (DefaultOS), so that specs
	// written before the field keep their meaning. The steps that change a
	// host refuse a spec for another OS (exit code 2, field spec.os).
	OS OS `json:"os,omitempty"`
	// Role is ControlPlane or Worker. Required. Windows machines are
	// workers only (kubeadm runs no Windows control plane).
	Role Role `json:"role"`
	// Action is Init or Join. Default: Join. Init requires role ControlPlane.
	Action Action `json:"action,omitempty"`
	// Kubernetes holds the cluster-wide settings. Required (version at least).
	Kubernetes Kubernetes `json:"kubernetes"`
	// ControlPlane holds control-plane settings. Used when role is
	// ControlPlane; must be empty for workers.
	ControlPlane *ControlPlane `json:"controlPlane,omitempty"`
	// Join holds the discovery settings for action Join. Required for Join,
	// must be empty for Init.
	Join *Join `json:"join,omitempty"`
	// Node holds this node's registration and kubelet settings.
	Node Node `json:"node,omitempty"`
	// Host holds host preparation: sysctl, kernel modules, files, containerd,
	// extra static pods and the Active Directory domain join.
	Host Host `json:"host,omitempty"`
	// Report says where the outcome report goes.
	Report Report `json:"report,omitempty"`
	// Security asks for a security profile (CIS Kubernetes Benchmark,
	// DISA STIG) with its waivers. Optional; see Security.
	Security *Security `json:"security,omitempty"`
}

// Kubernetes holds cluster-wide settings (kubeadm ClusterConfiguration).
type Kubernetes struct {
	// Version is the Kubernetes version of the control plane and kubelet,
	// "vMAJOR.MINOR.PATCH", for example "v1.37.2"; a strict semantic version
	// (no leading zeros), checked the same way for every role. Required:
	// machineadm never looks a version up on the internet. kubeadm field:
	// kubernetesVersion.
	Version string `json:"version"`
	// ClusterName names the cluster in kubeconfigs. Default "kubernetes".
	// kubeadm field: clusterName.
	ClusterName string `json:"clusterName,omitempty"`
	// ControlPlaneEndpoint is the stable "host:port" (DNS name or IP) that
	// reaches every API server, usually a load balancer. Required for HA;
	// it is added to the API server certificate's SANs. kubeadm field:
	// controlPlaneEndpoint.
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint,omitempty"`
	// ImageRepository is the registry prefix of the control-plane images,
	// for example a mirror in an air-gapped site. Default "registry.k8s.io".
	// Shape: host[:port] with optional lower-case path components
	// ("registry.example.com:5000/k8s"); no scheme, tag or digest
	// (distribution reference grammar).
	// kubeadm field: imageRepository.
	ImageRepository string `json:"imageRepository,omitempty"`
	// Networking holds the cluster's address ranges.
	Networking Networking `json:"networking,omitempty"`
	// FeatureGates enables or disables kubeadm feature gates by name.
	// kubeadm field: featureGates.
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// Networking holds the cluster's address ranges (kubeadm Networking).
type Networking struct {
	// PodSubnet is the pod network CIDR (comma-separated for dual stack),
	// for example "10.244.0.0/16": a network address, without host bits
	// set ("10.244.1.0/16" is refused). Optional; the CNI plugin must
	// agree. kubeadm field: networking.podSubnet.
	PodSubnet string `json:"podSubnet,omitempty"`
	// ServiceSubnet is the service CIDR, a network address without host
	// bits set. Default "10.96.0.0/12".
	// kubeadm field: networking.serviceSubnet.
	ServiceSubnet string `json:"serviceSubnet,omitempty"`
	// DNSDomain is the cluster DNS domain. Default "cluster.local".
	// kubeadm field: networking.dnsDomain.
	DNSDomain string `json:"dnsDomain,omitempty"`
}

// Arg is one command-line argument of a control-plane component or the
// kubelet, given as name and value without the leading "--". kubeadm type:
// Arg (v1beta4 extraArgs).
type Arg struct {
	// Name of the flag without "--", for example "audit-log-maxage".
	Name string `json:"name"`
	// Value of the flag.
	Value string `json:"value"`
}

// Component holds the settings shared by the control-plane components.
type Component struct {
	// ExtraArgs are extra flags, appended after kubeadm's own; a name given
	// here overrides kubeadm's value. A flag that a typed field of the
	// component sets (for the API server: audit, encryption,
	// authentication, authorization) is refused. kubeadm field: extraArgs.
	ExtraArgs []Arg `json:"extraArgs,omitempty"`
	// ExtraVolumes are host paths mounted into the component's static pod,
	// for files its extraArgs name. Only with runtime StaticPods (units
	// read the host's files). Refused: a hostPath of "/", "/run" or
	// "/var/run", or in "/proc", "/sys", "/dev" or "/var/lib/kubelet", or
	// in the socket directory of a daemon that runs anything as root,
	// below "/run" or "/var/run" ("containerd", "crio", "docker",
	// "docker.sock", "cri-dockerd.sock", "systemd", "dbus") (the pod would
	// get the host itself: its root through "/proc/1/root", its disks,
	// kernel interfaces, the kubelet's credentials or a daemon's socket,
	// the container runtime's among them, reachable even through a
	// read-only mount; mount the directory the files are in); a name
	// kubeadm or machineadm uses ("machineadm-" names, "k8s-certs", "kubeconfig", …);
	// a mountPath another volume of the pod has, or inside a directory
	// kubeadm or machineadm mounts. kubeadm field: extraVolumes.
	ExtraVolumes []HostPathMount `json:"extraVolumes,omitempty"`
}

// APIServer holds kube-apiserver settings (kubeadm APIServer).
type APIServer struct {
	Component `json:",inline"`
	// CertSANs are extra Subject Alternative Names (IPs or DNS names) for
	// the API server serving certificate. The control-plane endpoint host,
	// node name and advertise address are always included. kubeadm field:
	// apiServer.certSANs.
	CertSANs []string `json:"certSANs,omitempty"`
	// Audit turns on audit logging with a policy and backends. Optional.
	Audit *Audit `json:"audit,omitempty"`
	// Encryption encrypts resources at rest in etcd (keys or KMS v2).
	// Optional. Default: none; under spec.security.profile on a control
	// plane, Secrets are encrypted with aescbc and the cluster's key from
	// the CA set (pki.dir's encryption.key, sealed or not), and a control
	// plane with no such key and no encryption is refused: every control
	// plane of a cluster needs the same key.
	Encryption *Encryption `json:"encryption,omitempty"`
	// Authentication adds JWT, anonymous and webhook authentication.
	// Optional.
	Authentication *Authentication `json:"authentication,omitempty"`
	// Authorization replaces kubeadm's authorization modes (Node, RBAC)
	// with an authorizer chain. Optional.
	Authorization *Authorization `json:"authorization,omitempty"`
}

// ControlPlane holds control-plane node settings.
type ControlPlane struct {
	// AdvertiseAddress is the IP this node's API server advertises. Default:
	// the address of the interface of the default route (kubeadm chooses).
	// Loopback, unspecified (0.0.0.0, ::), multicast and broadcast
	// addresses are invalid: other nodes must reach it.
	// kubeadm field: localAPIEndpoint.advertiseAddress (Init) or
	// controlPlane.localAPIEndpoint.advertiseAddress (Join).
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
	// BindPort is the API server's secure port. Default 6443.
	// kubeadm field: localAPIEndpoint.bindPort.
	BindPort int32 `json:"bindPort,omitempty"`
	// APIServer holds kube-apiserver settings.
	APIServer APIServer `json:"apiServer,omitempty"`
	// ControllerManager holds kube-controller-manager settings. On Init,
	// machineadm adds three flags for a fast first join (the controller
	// manager of a new cluster leads and starts its controllers, the
	// cluster-info signer and CSR approver among them, in about 1 s instead
	// of 5-8 s): kube-api-qps 200 and kube-api-burst 300 (kubeadm's 20 and
	// 30; cost: up to 200 requests per second to the API server, bursts of
	// 300) and leader-elect-retry-period 500ms (2s; cost: standby
	// controller-managers of an HA control plane read the Lease every 0.5
	// s). A flag of the same name in extraArgs replaces machineadm's value.
	ControllerManager Component `json:"controllerManager,omitempty"`
	// Scheduler holds kube-scheduler settings.
	Scheduler Component `json:"scheduler,omitempty"`
	// Etcd holds etcd settings.
	Etcd Etcd `json:"etcd,omitempty"`
	// PKI says where the shared cluster CA material comes from.
	PKI PKI `json:"pki,omitempty"`
	// CertificateKey is the 32-byte hex key (64 hex characters) that encrypts
	// the shared certificates in the kubeadm-certs Secret. On Init it makes
	// machineadm upload the certificates (kubeadm phase upload-certs); on
	// Join it decrypts them. Secret. kubeadm field: certificateKey.
	CertificateKey *SecretSource `json:"certificateKey,omitempty" secret:"certificate-key"`
	// BootstrapTokens are created on Init for later joins. Default: none
	// (kubeadm then creates one random token with a 24h TTL). kubeadm field:
	// bootstrapTokens.
	BootstrapTokens []BootstrapToken `json:"bootstrapTokens,omitempty"`
	// Runtime says how etcd and the control-plane components run:
	// "StaticPods" (default): kubeadm's static pod manifests, run by the
	// kubelet; "Systemd": systemd units derived from the same pod specs
	// kubeadm builds (same command, flags and environment), and the
	// kubelet's staticPodPath is turned off. See
	// docs/systemd-control-plane.md.
	Runtime ControlPlaneRuntime `json:"runtime,omitempty"`
	// Binaries are the executables the Systemd runtime starts. Each is an
	// absolute path; a path that is also a spec.host.files entry is
	// delivered by machineadm (verified by that entry's sha256), any other
	// must already be an executable regular file on the image (checked in
	// inputs-check). Only with runtime Systemd; defaults there to
	// /usr/local/bin/<component>.
	Binaries *ControlPlaneBinaries `json:"binaries,omitempty"`
}

// ControlPlaneRuntime is how the control plane runs on a node.
type ControlPlaneRuntime string

const (
	// RuntimeStaticPods runs the control plane as kubeadm's static pods.
	RuntimeStaticPods ControlPlaneRuntime = "StaticPods"
	// RuntimeSystemd runs the control plane as systemd units.
	RuntimeSystemd ControlPlaneRuntime = "Systemd"
)

// ControlPlaneBinaries are the paths of the control-plane executables the
// Systemd runtime runs.
type ControlPlaneBinaries struct {
	// Etcd is the etcd server binary (local etcd only). Default
	// "/usr/local/bin/etcd".
	Etcd string `json:"etcd,omitempty"`
	// KubeAPIServer is the kube-apiserver binary. Default
	// "/usr/local/bin/kube-apiserver".
	KubeAPIServer string `json:"kubeAPIServer,omitempty"`
	// KubeControllerManager is the kube-controller-manager binary. Default
	// "/usr/local/bin/kube-controller-manager".
	KubeControllerManager string `json:"kubeControllerManager,omitempty"`
	// KubeScheduler is the kube-scheduler binary. Default
	// "/usr/local/bin/kube-scheduler".
	KubeScheduler string `json:"kubeScheduler,omitempty"`
}

// Etcd holds etcd settings (kubeadm Etcd). Local and External are
// mutually exclusive; default is a local etcd static pod.
type Etcd struct {
	// Local runs an etcd member on this node as a static pod.
	Local *LocalEtcd `json:"local,omitempty"`
	// External uses an existing etcd cluster.
	External *ExternalEtcd `json:"external,omitempty"`
}

// LocalEtcd holds settings of the local etcd member (kubeadm LocalEtcd).
type LocalEtcd struct {
	// DataDir is etcd's data directory. Default "/var/lib/etcd".
	DataDir string `json:"dataDir,omitempty"`
	// ExtraArgs are extra etcd flags.
	ExtraArgs []Arg `json:"extraArgs,omitempty"`
	// ServerCertSANs are extra SANs for the etcd serving certificate.
	ServerCertSANs []string `json:"serverCertSANs,omitempty"`
	// PeerCertSANs are extra SANs for the etcd peer certificate.
	PeerCertSANs []string `json:"peerCertSANs,omitempty"`
}

// ExternalEtcd points at an existing etcd cluster (kubeadm ExternalEtcd).
type ExternalEtcd struct {
	// Endpoints are the etcd client URLs, for example
	// "https://10.0.0.10:2379". Required.
	Endpoints []string `json:"endpoints"`
	// CAFile is the path of the etcd CA certificate on this machine.
	CAFile string `json:"caFile,omitempty"`
	// CertFile is the path of the etcd client certificate.
	CertFile string `json:"certFile,omitempty"`
	// KeyFile is the path of the etcd client key.
	KeyFile string `json:"keyFile,omitempty"`
}

// PKI says where the shared cluster CA set comes from.
type PKI struct {
	// Dir is a directory on this machine with the CA set in kubeadm's layout,
	// as written by `machineadm pki init --out DIR`: ca.crt/ca.key,
	// front-proxy-ca.crt/.key, etcd/ca.crt/.key, sa.key/sa.pub, and the
	// cluster's encryption-at-rest key encryption.key (used under
	// spec.security.profile when apiServer.encryption is not set). Whatever is
	// present is copied into kubeadm's certificate directory before the certs
	// phase; whatever is missing is generated by kubeadm on Init. Default:
	// empty (kubeadm generates every CA on Init; Join uses upload-certs).
	Dir string `json:"dir,omitempty" secret:"ca-dir"`
	// CertificatesDir is where kubeadm keeps the cluster's certificates.
	// Default "/etc/kubernetes/pki". kubeadm field: certificatesDir.
	CertificatesDir string `json:"certificatesDir,omitempty"`
	// EncryptionAlgorithm is the key type of certificates kubeadm creates:
	// "ECDSA-P256" (default), "ECDSA-P384", "RSA-2048", "RSA-3072" or
	// "RSA-4096". kubeadm field: encryptionAlgorithm.
	EncryptionAlgorithm string `json:"encryptionAlgorithm,omitempty"`
	// RenewBefore is the certificate renewal window of `machineadm
	// upgrade`: a kubeadm certificate (in CertificatesDir, or embedded in
	// a kubeconfig file of /etc/kubernetes) that expires within it is
	// renewed from the local CA. A Go duration ("720h", "2160h"), at least
	// 0 ("0s": renew none but the expired) and shorter than the
	// certificates' one-year lifetime (8760h, refused: every run would
	// renew every certificate). Default empty: 720h (30 days).
	// A Kubernetes version change renews every certificate anyway, as
	// kubeadm's upgrade does. Not used at bootstrap.
	RenewBefore string `json:"renewBefore,omitempty"`
}

// SecretSource gives a secret value either inline or as a file on this
// machine. Exactly one of Value and File is set. Inline values in user data
// are readable by anyone who can read instance metadata; prefer File with a
// file delivered by a secure channel.
type SecretSource struct {
	// Value is the secret itself.
	Value string `json:"value,omitempty"`
	// File is the absolute path of a file that holds the secret; surrounding
	// white space is trimmed.
	File string `json:"file,omitempty"`
}

// BootstrapToken is a bootstrap token created on Init
// (kubeadm BootstrapToken).
type BootstrapToken struct {
	// Token is "[a-z0-9]{6}.[a-z0-9]{16}" (see `machineadm token generate`).
	// Secret. Required.
	Token SecretSource `json:"token" secret:"bootstrap-token"`
	// Description is a human-readable note stored with the token.
	Description string `json:"description,omitempty"`
	// TTL is how long the token lives, as a Go duration ("24h"); "0s" never
	// expires. Default "24h".
	TTL string `json:"ttl,omitempty"`
	// Groups are extra groups the token authenticates as. Default
	// ["system:bootstrappers:kubeadm:default-node-token"].
	Groups []string `json:"groups,omitempty"`
	// Usages are the token's usages. Default ["signing", "authentication"].
	Usages []string `json:"usages,omitempty"`
}

// Join holds the discovery settings for joining a cluster with a bootstrap
// token (kubeadm BootstrapTokenDiscovery).
type Join struct {
	// APIServerEndpoint is the "host:port" of an API server or of the
	// control-plane endpoint. Required.
	APIServerEndpoint string `json:"apiServerEndpoint"`
	// Token is the bootstrap token, "[a-z0-9]{6}.[a-z0-9]{16}". Secret.
	// Required.
	Token SecretSource `json:"token" secret:"bootstrap-token"`
	// CACertHashes pin the cluster CA: "sha256:" and the hex SHA-256 of the
	// CA certificate's DER SubjectPublicKeyInfo (printed by
	// `machineadm pki init`). Required unless UnsafeSkipCAVerification.
	CACertHashes []string `json:"caCertHashes,omitempty"`
	// UnsafeSkipCAVerification joins without pinning the CA. Default false.
	// Anyone who can impersonate the endpoint can then take over the node.
	UnsafeSkipCAVerification bool `json:"unsafeSkipCAVerification,omitempty"`
	// Timeout bounds discovery and the TLS bootstrap, as a Go duration.
	// Default "5m". kubeadm field: timeouts.discovery and
	// timeouts.tlsBootstrap.
	Timeout string `json:"timeout,omitempty"`
}

// Node holds this node's registration (kubeadm NodeRegistrationOptions) and
// kubelet settings.
type Node struct {
	// Name is the Node object's name. Default: the host name, lower-cased.
	// kubeadm field: nodeRegistration.name.
	Name string `json:"name,omitempty"`
	// CRISocket is the container runtime's CRI endpoint. Default
	// "unix:///run/containerd/containerd.sock" (spec.os windows:
	// "npipe:////./pipe/containerd-containerd"). kubeadm field:
	// nodeRegistration.criSocket.
	CRISocket string `json:"criSocket,omitempty"`
	// Labels are set on the Node object by the kubelet (--node-labels).
	// The NodeRestriction admission plugin refuses most labels in the
	// kubernetes.io and k8s.io namespaces (node-role.kubernetes.io/* among
	// them); such labels are reported as errors.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are registered with the Node. Default: none for workers, the
	// node-role.kubernetes.io/control-plane:NoSchedule taint for control-plane
	// nodes. An explicit empty list means no taints. kubeadm field:
	// nodeRegistration.taints.
	Taints *[]Taint `json:"taints,omitempty"`
	// IgnorePreflightErrors lists kubeadm preflight checks whose errors are
	// only warnings, by kubeadm's check name (for example "Swap", "NumCPU")
	// or "all". kubeadm field: nodeRegistration.ignorePreflightErrors.
	IgnorePreflightErrors []string `json:"ignorePreflightErrors,omitempty"`
	// Kubelet holds kubelet settings.
	Kubelet Kubelet `json:"kubelet,omitempty"`
}

// Taint is a Node taint (core/v1 Taint).
type Taint struct {
	// Key of the taint. Required.
	Key string `json:"key"`
	// Value of the taint. Optional.
	Value string `json:"value,omitempty"`
	// Effect is NoSchedule, PreferNoSchedule or NoExecute. Required.
	Effect string `json:"effect"`
}

// Kubelet holds kubelet settings, delivered through kubeadm: flags in
// nodeRegistration.kubeletExtraArgs and configuration through a kubeadm
// patch of the KubeletConfiguration.
type Kubelet struct {
	// ExtraArgs are extra kubelet flags. kubeadm field:
	// nodeRegistration.kubeletExtraArgs.
	ExtraArgs []Arg `json:"extraArgs,omitempty"`
	// Config is a partial KubeletConfiguration (kubelet.config.k8s.io/v1beta1)
	// merged over kubeadm's defaults with a JSON merge patch, for example
	// {"failCgroupV1": false, "maxPods": 50}. Field names are the
	// KubeletConfiguration's; unknown names and wrong types are errors.
	// Numbers and durations must be in the range the kubelet accepts
	// (for example maxPods not negative, healthzPort 0–65535,
	// cpuCFSQuotaPeriod 1ms–1s, imageGCLowThresholdPercent below
	// imageGCHighThresholdPercent, whose default is 85): the kubelet's own
	// range checks, with its defaults for the fields left out.
	Config map[string]any `json:"config,omitempty"`
}

// Host holds host preparation settings.
type Host struct {
	// Sysctl sets kernel parameters, for example
	// {"net.ipv4.ip_forward": "1"}. Keys are dotted /proc/sys paths; values
	// are written as given. Persisted in /etc/sysctl.d/90-machineadm.conf.
	Sysctl map[string]string `json:"sysctl,omitempty"`
	// KernelModules are loaded before sysctl is applied and persisted in
	// /etc/modules-load.d/machineadm.conf, for example ["br_netfilter"]:
	// names of letters, digits, "_" and "-", never starting with "-".
	KernelModules []string `json:"kernelModules,omitempty"`
	// Files are written before anything else runs.
	Files []File `json:"files,omitempty"`
	// Containerd configures containerd. Optional; when absent containerd's
	// configuration is left as the OS provides it.
	Containerd *Containerd `json:"containerd,omitempty"`
	// StaticPods are extra static pod manifests placed in the kubelet's
	// manifest directory on control-plane nodes.
	StaticPods []StaticPod `json:"staticPods,omitempty"`
	// DomainJoin joins the machine to an Active Directory domain (Windows
	// and Linux). Optional.
	DomainJoin *DomainJoin `json:"domainJoin,omitempty"`
}

// File is one file written on the host. Exactly one of Content and Source
// is set (an empty Content writes an empty file).
type File struct {
	// Path is the absolute path of the file. Required.
	Path string `json:"path"`
	// Content is the file's content, encoded as Encoding says.
	Content string `json:"content,omitempty" secret:"file-content"`
	// Encoding of Content: "" (plain text, default), "base64" or
	// "gzip+base64".
	Encoding string `json:"encoding,omitempty"`
	// Source fetches the content from a URL, verified by digest.
	Source *RemoteSource `json:"source,omitempty"`
	// Mode is the octal permission string, for example "0644". Default
	// "0644"; "0600" is advised for secrets.
	Mode string `json:"mode,omitempty"`
	// Owner is a user name or numeric uid. Default "0" (root).
	Owner string `json:"owner,omitempty"`
	// Group is a group name or numeric gid. Default "0" (root).
	Group string `json:"group,omitempty"`
	// Append appends Content to an existing file instead of replacing it.
	Append bool `json:"append,omitempty"`
}

// RemoteSource is content fetched at boot and verified before use.
type RemoteSource struct {
	// URL is an http, https or file URL. Required.
	URL string `json:"url" secret:"url"`
	// SHA256 is the hex SHA-256 digest of the content. Required.
	SHA256 string `json:"sha256"`
}

// Containerd holds structured containerd settings, rendered as containerd's
// config.toml and hosts.toml files.
type Containerd struct {
	// ConfigVersion is the config.toml schema version: 2 (containerd 1.7) or
	// 3 (containerd 2.x). Default: chosen from the installed containerd's
	// `containerd --version` (on Windows `C:\Program Files\containerd\containerd.exe
	// --version`): 3 for 2.x, 2 for 1.x; when it cannot be asked, 2 on
	// Linux and 3 on Windows, with a warning.
	ConfigVersion int `json:"configVersion,omitempty"`
	// ConfigFile is containerd's configuration file. Default
	// "/etc/containerd/config.toml" (spec.os windows:
	// "C:/Program Files/containerd/config.toml").
	ConfigFile string `json:"configFile,omitempty"`
	// CgroupDriver is "systemd" (default) or "cgroupfs"; it sets runc's
	// SystemdCgroup option and must match the kubelet's cgroupDriver.
	// Windows has no cgroups and ignores it.
	CgroupDriver string `json:"cgroupDriver,omitempty"`
	// SandboxImage is the pause image, for example
	// "registry.k8s.io/pause:3.10". Default: containerd's own.
	SandboxImage string `json:"sandboxImage,omitempty"`
	// RestrictOOMScoreAdj makes the CRI clamp negative oom_score_adj values
	// (needed where containerd lacks CAP_SYS_RESOURCE). containerd key:
	// restrict_oom_score_adj. Default false.
	RestrictOOMScoreAdj bool `json:"restrictOOMScoreAdj,omitempty"`
	// Registries configure registry hosts (hosts.toml under config_path
	// "/etc/containerd/certs.d").
	Registries []Registry `json:"registries,omitempty"`
	// Proxy sets HTTP(S)_PROXY/NO_PROXY for containerd.service through a
	// systemd drop-in.
	Proxy *Proxy `json:"proxy,omitempty"`
	// Runtimes are extra runtimes besides runc (for example nvidia, kata);
	// an entry named "runc" changes runc's options.
	Runtimes []Runtime `json:"runtimes,omitempty"`
	// DefaultRuntime is the runtime handler used by pods without a
	// RuntimeClass: "runc" (default; spec.os windows: "runhcs-wcow-process") or
	// the name of one of Runtimes.
	// containerd key: containerd.default_runtime_name.
	DefaultRuntime string `json:"defaultRuntime,omitempty"`
	// ConfigPatch is TOML deep-merged over the generated config.toml last:
	// tables merge key by key, other values (arrays included) replace the
	// generated ones. It must not set version (see ConfigVersion), nor use
	// a key of the other config version's schema (a version-2
	// plugins."io.containerd.grpc.v1.cri".containerd table in version 3),
	// which containerd would ignore. The result is world-readable (0644):
	// keep credentials out of it.
	ConfigPatch string `json:"configPatch,omitempty" secret:"text"`
}

// Registry configures access to one registry (containerd hosts.toml).
type Registry struct {
	// Host is the registry as referenced in image names, for example
	// "docker.io" or "registry.example.com:5000". Required.
	Host string `json:"host"`
	// Server overrides the upstream URL. Default "https://<host>".
	Server string `json:"server,omitempty" secret:"url"`
	// Mirrors are tried in order before Server.
	Mirrors []Mirror `json:"mirrors,omitempty"`
	// CACert is a PEM CA bundle trusted for Server.
	CACert string `json:"caCert,omitempty"`
	// SkipVerify disables TLS verification for Server. Default false.
	SkipVerify bool `json:"skipVerify,omitempty"`
	// ClientCert is a PEM client certificate presented to Server (mutual
	// TLS); it goes with ClientKey. Written to
	// /etc/containerd/certs.d/<host>/client.crt. containerd hosts.toml key:
	// client.
	ClientCert string `json:"clientCert,omitempty" secret:"pem-cert"`
	// ClientKey is the PEM private key of ClientCert. Secret: written 0600
	// to /etc/containerd/certs.d/<host>/client.key and never shown.
	ClientKey string `json:"clientKey,omitempty" secret:"pem-key"`
}

// Mirror is a registry mirror (a [host."URL"] table of hosts.toml).
type Mirror struct {
	// URL of the mirror, for example "https://mirror.example.com". Required.
	URL string `json:"url" secret:"url"`
	// Capabilities are "pull", "resolve" and/or "push". Default
	// ["pull", "resolve"].
	Capabilities []string `json:"capabilities,omitempty"`
	// CACert is a PEM CA bundle trusted for this mirror.
	CACert string `json:"caCert,omitempty"`
	// ClientCert and ClientKey are a PEM client certificate and key. The
	// key is secret.
	ClientCert string `json:"clientCert,omitempty" secret:"pem-cert"`
	// ClientKey is the PEM private key for ClientCert. Secret.
	ClientKey string `json:"clientKey,omitempty" secret:"pem-key"`
	// SkipVerify disables TLS verification for this mirror. Default false.
	SkipVerify bool `json:"skipVerify,omitempty"`
	// OverridePath says that URL already includes the registry API path,
	// for mirrors not served under /v2 (for example a Harbor proxy cache
	// at "https://harbor.example.com/v2/proxy-docker"). Default false.
	// containerd hosts.toml key: override_path.
	OverridePath bool `json:"overridePath,omitempty"`
}

// Proxy holds proxy settings for containerd.service, written to a
// systemd drop-in. A URL with credentials ("http://user:password@proxy:3128")
// makes the drop-in 0600 (else 0644) and draws a validation warning; the
// password is redacted from logs and reports, and `machineadm render`
// refuses it without --insecure-inline-secrets.
type Proxy struct {
	// HTTPProxy is the HTTP_PROXY value: an http, https or socks5 URL.
	HTTPProxy string `json:"httpProxy,omitempty" secret:"url"`
	// HTTPSProxy is the HTTPS_PROXY value: an http, https or socks5 URL.
	HTTPSProxy string `json:"httpsProxy,omitempty" secret:"url"`
	// NoProxy is the NO_PROXY value (comma-separated).
	NoProxy string `json:"noProxy,omitempty"`
}

// Runtime is a containerd CRI runtime handler.
type Runtime struct {
	// Name is the handler name used by RuntimeClasses. Required.
	Name string `json:"name"`
	// Type is the shim, for example "io.containerd.runc.v2" (default;
	// spec.os windows: "io.containerd.runhcs.v1").
	Type string `json:"type,omitempty"`
	// Options are the runtime's options table, for example
	// {"BinaryName": "/usr/bin/nvidia-container-runtime"} or
	// {"NoNewKeyring": true}.
	Options map[string]any `json:"options,omitempty"`
}

// StaticPod is an extra static pod manifest for a control-plane node.
type StaticPod struct {
	// Name is the manifest's file name without ".yaml". Required.
	Name string `json:"name"`
	// Manifest is a v1 Pod in YAML or JSON. Required.
	Manifest string `json:"manifest" secret:"text"`
}

// Report says where the outcome report goes.
type Report struct {
	// Path of the JSON report. Default "/var/lib/machineadm/report.json"
	// (spec.os windows: "C:/ProgramData/machineadm/report.json").
	Path string `json:"path,omitempty"`
	// Console also writes the human summary to the serial console when one
	// exists. Default true.
	Console *bool `json:"console,omitempty"`
	// Sentinel is the file created on success, for Cluster API. Default
	// "/run/cluster-api/bootstrap-success.complete" (spec.os windows:
	// "C:/run/cluster-api/bootstrap-success.complete"); "-" disables it.
	Sentinel string `json:"sentinel,omitempty"`
	// URL receives the JSON report by HTTP(S) POST. Optional. Credentials
	// in it (user information) draw a validation warning, are redacted
	// from logs and reports, and make `machineadm render` refuse the spec
	// without --insecure-inline-secrets.
	URL string `json:"url,omitempty" secret:"url"`
}
