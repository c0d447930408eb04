package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The types below mirror the machine spec's (package
// pkg/apis/machineadm/v1alpha1) field for field and JSON name for JSON
// name, with OpenAPI and CEL validation added so the API server refuses
// bad input with the field path. Free-form objects (kubelet config,
// runtime options) are apiextensions JSON. ToMachineSpec copies them into
// the machine spec by a strict JSON round trip, so a field missing there
// is an error, never a silent loss.

// Arg is a command-line flag without the leading "--" (kubeadm v1beta4
// Arg).
type Arg struct {
	// Name of the flag, for example "v".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_.-]*$`
	Name string `json:"name"`
	// Value of the flag.
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value"`
}

// Component holds a control-plane component's extra flags.
type Component struct {
	// ExtraArgs are appended after kubeadm's flags; a name given here
	// overrides kubeadm's value.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	ExtraArgs []Arg `json:"extraArgs,omitempty"`
	// ExtraVolumes are host paths mounted into the component's static
	// pod, for files its extraArgs name (runtime StaticPods only).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	ExtraVolumes []HostPathMount `json:"extraVolumes,omitempty"`
}

// APIServer holds kube-apiserver settings.
type APIServer struct {
	Component `json:",inline"`
	// CertSANs are extra SANs of the serving certificate.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	CertSANs []string `json:"certSANs,omitempty"`
	// Audit turns on audit logging with a policy and backends.
	// +optional
	Audit *Audit `json:"audit,omitempty"`
	// Encryption encrypts resources at rest in etcd, keys from Secrets.
	// Required under security.profile on control-plane Machines.
	// +optional
	Encryption *Encryption `json:"encryption,omitempty"`
	// Authentication configures authenticators beyond kubeadm's.
	// +optional
	Authentication *Authentication `json:"authentication,omitempty"`
	// Authorization replaces kubeadm's authorizer chain.
	// +optional
	Authorization *Authorization `json:"authorization,omitempty"`
}

// ControlPlaneSpec holds control-plane settings of control-plane Machines
// (machine spec field spec.controlPlane without advertiseAddress, pki.dir,
// certificateKey and bootstrapTokens, which the controller sets).
// +kubebuilder:validation:XValidation:rule="!has(self.binaries) || (has(self.runtime) && self.runtime == 'Systemd')",message="binaries are only for runtime Systemd",fieldPath=".binaries"
// +kubebuilder:validation:XValidation:rule="!has(self.binarySources) || (has(self.runtime) && self.runtime == 'Systemd')",message="binarySources are only for runtime Systemd",fieldPath=".binarySources"
// +kubebuilder:validation:XValidation:rule="!has(self.etcd) || !has(self.etcd.external) || !has(self.binaries) || !has(self.binaries.etcd)",message="an external etcd runs no local etcd binary",fieldPath=".binaries.etcd"
// +kubebuilder:validation:XValidation:rule="!has(self.etcd) || !has(self.etcd.external) || !has(self.binarySources) || !has(self.binarySources.etcd)",message="an external etcd runs no local etcd binary",fieldPath=".binarySources.etcd"
type ControlPlaneSpec struct {
	// BindPort is the API server's secure port. Default
	// 6443.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	BindPort int32 `json:"bindPort,omitempty"`
	// APIServer holds kube-apiserver settings.
	// +optional
	APIServer APIServer `json:"apiServer,omitempty,omitzero"`
	// ControllerManager holds kube-controller-manager settings.
	// +optional
	ControllerManager Component `json:"controllerManager,omitempty,omitzero"`
	// Scheduler holds kube-scheduler settings.
	// +optional
	Scheduler Component `json:"scheduler,omitempty,omitzero"`
	// Etcd holds the local etcd member's settings, or the external etcd
	// cluster.
	// +optional
	Etcd *Etcd `json:"etcd,omitempty"`
	// EncryptionAlgorithm is the key type of certificates kubeadm and the
	// controller create. Default "ECDSA-P256".
	// +optional
	// +kubebuilder:validation:Enum=ECDSA-P256;ECDSA-P384;RSA-2048;RSA-3072;RSA-4096
	EncryptionAlgorithm string `json:"encryptionAlgorithm,omitempty"`
	// Runtime says how etcd and the control-plane components run:
	// "StaticPods" (default, kubeadm's static pods) or "Systemd" (systemd
	// units built from the same pod specs, no static pods at all; R7,
	// docs/systemd-control-plane.md). Machine spec field
	// spec.controlPlane.runtime.
	// +optional
	// +kubebuilder:validation:Enum=StaticPods;Systemd
	Runtime string `json:"runtime,omitempty"`
	// Binaries are the paths of the executables runtime Systemd starts
	// (machine spec field spec.controlPlane.binaries). Default, each:
	// /usr/local/bin/<component> (etcd only with a local etcd). A binary
	// without a source in BinarySources must already be in the machine
	// image. Only with runtime Systemd.
	// +optional
	Binaries *ControlPlaneBinaries `json:"binaries,omitempty"`
	// BinarySources fetch the binaries at boot: the controller adds a
	// spec.host.files entry (mode 0755, source URL and SHA-256) at each
	// binary's path, which machineadm downloads and verifies before
	// anything runs. Only with runtime Systemd; the binaries' version must
	// be the Machine's spec.version (it is not checked here).
	// +optional
	BinarySources *ControlPlaneBinarySources `json:"binarySources,omitempty"`
}

// ControlPlaneBinaries are the paths of the control-plane executables the
// Systemd runtime runs (machine spec ControlPlaneBinaries).
type ControlPlaneBinaries struct {
	// Etcd is the etcd server (local etcd only). Default
	// "/usr/local/bin/etcd".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*[^/]$`
	Etcd string `json:"etcd,omitempty"`
	// KubeAPIServer is kube-apiserver. Default
	// "/usr/local/bin/kube-apiserver".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*[^/]$`
	KubeAPIServer string `json:"kubeAPIServer,omitempty"`
	// KubeControllerManager is kube-controller-manager. Default
	// "/usr/local/bin/kube-controller-manager".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*[^/]$`
	KubeControllerManager string `json:"kubeControllerManager,omitempty"`
	// KubeScheduler is kube-scheduler. Default
	// "/usr/local/bin/kube-scheduler".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*[^/]$`
	KubeScheduler string `json:"kubeScheduler,omitempty"`
}

// ControlPlaneBinarySources are where the control-plane binaries come
// from, each a URL pinned by SHA-256 (as spec.host.files[].source takes
// it). A component without a source must be in the image at its path.
type ControlPlaneBinarySources struct {
	// Etcd is the etcd server's source (local etcd only).
	// +optional
	Etcd *RemoteSource `json:"etcd,omitempty"`
	// KubeAPIServer is kube-apiserver's source.
	// +optional
	KubeAPIServer *RemoteSource `json:"kubeAPIServer,omitempty"`
	// KubeControllerManager is kube-controller-manager's source.
	// +optional
	KubeControllerManager *RemoteSource `json:"kubeControllerManager,omitempty"`
	// KubeScheduler is kube-scheduler's source.
	// +optional
	KubeScheduler *RemoteSource `json:"kubeScheduler,omitempty"`
}

// Etcd holds etcd settings: a local (stacked) etcd member, the default, or
// an external etcd cluster. Local and External are mutually exclusive.
// +kubebuilder:validation:XValidation:rule="!(has(self.local) && has(self.external))",message="local and external are mutually exclusive",fieldPath=".external"
type Etcd struct {
	// Local holds the local etcd member's settings.
	// +optional
	Local *LocalEtcd `json:"local,omitempty"`
	// External points the API servers at an existing etcd cluster
	// (kubeadm ExternalEtcd, machine spec field
	// spec.controlPlane.etcd.external). Its client certificate and key
	// come from a Secret and are sealed.
	// +optional
	External *ExternalEtcd `json:"external,omitempty"`
}

// ExternalEtcd is an existing etcd cluster reached over TLS with a client
// certificate. The controller reads the certificate, key and CA from
// Secrets in the config's namespace and writes them on the machine as
// host files at CAFile, CertFile and KeyFile (the key readable by root
// only and sealed); it neither creates nor sends an etcd CA of its own.
// +kubebuilder:validation:XValidation:rule="[self.caFile, self.certFile, self.keyFile].all(p, [self.caFile, self.certFile, self.keyFile].exists_one(q, q == p))",message="caFile, certFile and keyFile must be three different paths"
type ExternalEtcd struct {
	// Endpoints are the etcd client URLs, for example
	// "https://10.0.0.10:2379", one per etcd member (no commas:
	// kube-apiserver's --etcd-servers joins them with commas). Required;
	// https only.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=2048
	// +kubebuilder:validation:items:Pattern=`^https://[^/@\s,\x00-\x1f\x7f]+(/[^\s,\x00-\x1f\x7f]*)?$`
	// +listType=set
	Endpoints []string `json:"endpoints"`
	// ClientCertificateFrom names the Secret with the API server's etcd
	// client certificate (key "tls.crt"), its private key ("tls.key")
	// and, optionally, the etcd CA ("ca.crt"). Default: Cluster API's
	// "<cluster>-apiserver-etcd-client". Without "ca.crt" the CA is the
	// "tls.crt" of Cluster API's "<cluster>-etcd" Secret, which must
	// exist then (the controller never creates it for an external etcd).
	// +optional
	ClientCertificateFrom *CertificateSource `json:"clientCertificateFrom,omitempty"`
	// CAFile is where the etcd CA certificate is written on the machine.
	// Default "/etc/kubernetes/pki/etcd/ca.crt".
	// +optional
	// +kubebuilder:default="/etc/kubernetes/pki/etcd/ca.crt"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*[^/]$`
	CAFile string `json:"caFile,omitempty"`
	// CertFile is where the client certificate is written. Default
	// "/etc/kubernetes/pki/apiserver-etcd-client.crt".
	// +optional
	// +kubebuilder:default="/etc/kubernetes/pki/apiserver-etcd-client.crt"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*[^/]$`
	CertFile string `json:"certFile,omitempty"`
	// KeyFile is where the client key is written (mode 0600). Default
	// "/etc/kubernetes/pki/apiserver-etcd-client.key".
	// +optional
	// +kubebuilder:default="/etc/kubernetes/pki/apiserver-etcd-client.key"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*[^/]$`
	KeyFile string `json:"keyFile,omitempty"`
}

// CertificateSource says where a TLS client certificate and its key come
// from.
type CertificateSource struct {
	// Secret is a Secret in the config's namespace with keys "tls.crt"
	// (PEM certificate) and "tls.key" (PEM private key), and optionally
	// "ca.crt" (PEM CA bundle) — the shape of a kubernetes.io/tls Secret
	// as cert-manager writes it.
	Secret TLSSecretReference `json:"secret"`
}

// TLSSecretReference names a Secret in the config's namespace.
type TLSSecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// LocalEtcd holds the local etcd member's settings.
type LocalEtcd struct {
	// DataDir is etcd's data directory. Default "/var/lib/etcd".
	// +optional
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*$`
	// +kubebuilder:validation:MaxLength=1024
	DataDir string `json:"dataDir,omitempty"`
	// ExtraArgs are extra etcd flags.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	ExtraArgs []Arg `json:"extraArgs,omitempty"`
	// ServerCertSANs are extra SANs of the etcd serving certificate.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	ServerCertSANs []string `json:"serverCertSANs,omitempty"`
	// PeerCertSANs are extra SANs of the etcd peer certificate.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	PeerCertSANs []string `json:"peerCertSANs,omitempty"`
}

// NodeSpec holds node registration and kubelet settings.
type NodeSpec struct {
	// CRISocket is the CRI endpoint. Default
	// "unix:///run/containerd/containerd.sock".
	// +optional
	// +kubebuilder:validation:Pattern=`^(unix|npipe)://`
	// +kubebuilder:validation:MaxLength=1024
	CRISocket string `json:"criSocket,omitempty"`
	// Labels are set on the Node by the kubelet. Labels in the
	// kubernetes.io and k8s.io namespaces are refused by the machine spec's
	// validation (NodeRestriction), except the ones it allows.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are registered with the Node. Default: none for workers,
	// node-role.kubernetes.io/control-plane:NoSchedule for control-plane
	// Machines; an explicit empty list means none.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Taints *[]Taint `json:"taints,omitempty"`
	// IgnorePreflightErrors lists kubeadm preflight checks reported only as
	// warnings, or "all".
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	IgnorePreflightErrors []string `json:"ignorePreflightErrors,omitempty"`
	// Kubelet holds kubelet settings.
	// +optional
	Kubelet Kubelet `json:"kubelet,omitempty,omitzero"`
}

// Taint is a Node taint.
type Taint struct {
	// Key of the taint.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`
	// Value of the taint.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Value string `json:"value,omitempty"`
	// Effect is NoSchedule, PreferNoSchedule or NoExecute.
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect string `json:"effect"`
}

// Kubelet holds kubelet flags and a partial KubeletConfiguration.
type Kubelet struct {
	// ExtraArgs are extra kubelet flags.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	ExtraArgs []Arg `json:"extraArgs,omitempty"`
	// Config is a partial KubeletConfiguration (kubelet.config.k8s.io/v1beta1)
	// merged over kubeadm's defaults, for example {"maxPods": 50}.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Config *apiextensionsv1.JSON `json:"config,omitempty"`
}

// HostSpec holds host preparation settings.
type HostSpec struct {
	// Sysctl sets kernel parameters by dotted /proc/sys path.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-z0-9_]+([./][a-z0-9_*-]+)+$'))",message="keys must be dotted /proc/sys paths, for example net.ipv4.ip_forward"
	Sysctl map[string]string `json:"sysctl,omitempty"`
	// KernelModules are loaded before sysctl is applied.
	// +optional
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9_-]+$`
	KernelModules []string `json:"kernelModules,omitempty"`
	// Files are written before anything else runs. File contents travel
	// in the bootstrap data: a file with a private key or token in it is
	// refused when the data is rendered.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Files []File `json:"files,omitempty"`
	// Containerd configures containerd.
	// +optional
	Containerd *Containerd `json:"containerd,omitempty"`
	// StaticPods are extra static pods for control-plane Machines.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	StaticPods []StaticPod `json:"staticPods,omitempty"`
	// DomainJoin joins the Machine to an Active Directory domain before
	// it joins its cluster: adcli on Linux, NetJoinDomain or an offline
	// join blob on Windows (machine spec field spec.host.domainJoin). The
	// password or blob comes from a Secret and is sealed.
	// +optional
	DomainJoin *DomainJoin `json:"domainJoin,omitempty"`
}

// File is one file written on the host. At most one of Content, Source
// and ContentFrom is set.
// +kubebuilder:validation:XValidation:rule="!(has(self.content) && has(self.source))",message="content and source are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!has(self.contentFrom) || !(has(self.content) || has(self.source))",message="contentFrom excludes content and source",fieldPath=".contentFrom"
// +kubebuilder:validation:XValidation:rule="!(has(self.source) || has(self.contentFrom)) || !has(self.encoding)",message="encoding applies to content only",fieldPath=".encoding"
// +kubebuilder:validation:XValidation:rule="!has(self.contentFrom) || !has(self.mode) || self.mode.endsWith('00')",message="a file whose content comes from a Secret must be readable by its owner only (for example 0600, the default): only such files are sealed",fieldPath=".mode"
type File struct {
	// Path is the absolute path: "/etc/x", or for os windows also a drive
	// path, 'C:\ProgramData\x'.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^([A-Za-z]:)?[/\\][^\x00-\x1f\x7f]*$`
	Path string `json:"path"`
	// Content is the file's content, encoded as Encoding says.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Content string `json:"content,omitempty"`
	// Encoding of Content: "" (plain), "base64" or "gzip+base64".
	// +optional
	// +kubebuilder:validation:Enum=base64;gzip+base64
	Encoding string `json:"encoding,omitempty"`
	// Source fetches the content from a URL, verified by digest.
	// +optional
	Source *RemoteSource `json:"source,omitempty"`
	// ContentFrom takes the content from a key of a Secret in the config's
	// namespace (KubeadmConfigSpec files[].contentFrom). The value is
	// sealed to the config's recipients; the file's mode must be
	// owner-only and defaults to "0600".
	// +optional
	ContentFrom *FileSource `json:"contentFrom,omitempty"`
	// Mode is the octal permission string. Default "0644" ("0600" with
	// ContentFrom).
	// +optional
	// +kubebuilder:validation:Pattern=`^0?[0-7]{3}$`
	Mode string `json:"mode,omitempty"`
	// Owner is a user name or uid. Default "0".
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Owner string `json:"owner,omitempty"`
	// Group is a group name or gid. Default "0".
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Group string `json:"group,omitempty"`
	// Append appends Content to an existing file.
	// +optional
	Append bool `json:"append,omitempty"`
}

// FileSource is where a file's content comes from.
type FileSource struct {
	// Secret is a key of a Secret in the config's namespace.
	Secret SecretKeyReference `json:"secret"`
}

// SecretKeyReference is one key of a Secret in the config's namespace
// (KubeadmConfigSpec SecretFileSource).
type SecretKeyReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// Key in the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// RemoteSource is content fetched at boot and verified by digest.
type RemoteSource struct {
	// URL is an http, https or file URL without credentials.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^(https?://[^/@\s\x00-\x1f\x7f]+(/[^\s\x00-\x1f\x7f]*)?|file:///[^\s\x00-\x1f\x7f]*)$`
	URL string `json:"url"`
	// SHA256 is the content's hex SHA-256 digest.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256"`
}

// Containerd holds structured containerd settings.
type Containerd struct {
	// ConfigVersion is the config.toml schema version, 2 or 3. Default:
	// chosen from the installed containerd.
	// +optional
	// +kubebuilder:validation:Enum=2;3
	ConfigVersion int `json:"configVersion,omitempty"`
	// ConfigFile is containerd's configuration file. Default
	// "/etc/containerd/config.toml".
	// +optional
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*$`
	ConfigFile string `json:"configFile,omitempty"`
	// CgroupDriver is "systemd" (default) or "cgroupfs".
	// +optional
	// +kubebuilder:validation:Enum=systemd;cgroupfs
	CgroupDriver string `json:"cgroupDriver,omitempty"`
	// SandboxImage is the pause image.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	SandboxImage string `json:"sandboxImage,omitempty"`
	// RestrictOOMScoreAdj clamps negative oom_score_adj values
	// (restrict_oom_score_adj).
	// +optional
	RestrictOOMScoreAdj bool `json:"restrictOOMScoreAdj,omitempty"`
	// Registries configure registry hosts (hosts.toml). Client
	// certificates and keys come from Secrets (clientCertificateFrom) and
	// are sealed; they are never given inline.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Registries []Registry `json:"registries,omitempty"`
	// Proxy sets HTTP(S)_PROXY/NO_PROXY for containerd; URLs with
	// credentials are refused.
	// +optional
	Proxy *Proxy `json:"proxy,omitempty"`
	// Runtimes are extra runtimes besides runc.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Runtimes []Runtime `json:"runtimes,omitempty"`
	// DefaultRuntime is the default runtime handler. Default "runc".
	// +optional
	DefaultRuntime string `json:"defaultRuntime,omitempty"`
	// ConfigPatch is TOML deep-merged over the generated config.toml.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	ConfigPatch string `json:"configPatch,omitempty"`
}

// Registry configures one registry (containerd hosts.toml).
type Registry struct {
	// Host is the registry as named in image references.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host"`
	// Server overrides the upstream URL.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://[^/@\s\x00-\x1f\x7f]+(/[^\s\x00-\x1f\x7f]*)?$`
	Server string `json:"server,omitempty"`
	// Mirrors are tried in order before Server.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Mirrors []Mirror `json:"mirrors,omitempty"`
	// CACert is a PEM CA bundle trusted for Server. Default: the "ca.crt"
	// of ClientCertificateFrom's Secret, when it has one.
	// +optional
	CACert string `json:"caCert,omitempty"`
	// SkipVerify disables TLS verification for Server.
	// +optional
	SkipVerify bool `json:"skipVerify,omitempty"`
	// ClientCertificateFrom names the Secret with the client certificate
	// presented to Server (mutual TLS): keys "tls.crt" and "tls.key",
	// optionally "ca.crt". Machine spec fields clientCert and clientKey;
	// the key is sealed.
	// +optional
	ClientCertificateFrom *CertificateSource `json:"clientCertificateFrom,omitempty"`
}

// Mirror is a registry mirror.
type Mirror struct {
	// URL of the mirror.
	// +kubebuilder:validation:Pattern=`^https?://[^/@\s\x00-\x1f\x7f]+(/[^\s\x00-\x1f\x7f]*)?$`
	URL string `json:"url"`
	// Capabilities are "pull", "resolve" and/or "push".
	// +optional
	// +kubebuilder:validation:items:Enum=pull;resolve;push
	Capabilities []string `json:"capabilities,omitempty"`
	// CACert is a PEM CA bundle trusted for this mirror. Default: the
	// "ca.crt" of ClientCertificateFrom's Secret, when it has one.
	// +optional
	CACert string `json:"caCert,omitempty"`
	// ClientCertificateFrom names the Secret with the client certificate
	// presented to this mirror: keys "tls.crt" and "tls.key", optionally
	// "ca.crt". The key is sealed.
	// +optional
	ClientCertificateFrom *CertificateSource `json:"clientCertificateFrom,omitempty"`
	// SkipVerify disables TLS verification for this mirror.
	// +optional
	SkipVerify bool `json:"skipVerify,omitempty"`
	// OverridePath says URL already includes the registry API path.
	// +optional
	OverridePath bool `json:"overridePath,omitempty"`
}

// Proxy holds proxy settings for containerd. URLs with credentials are
// refused: they would travel in the bootstrap data.
type Proxy struct {
	// HTTPProxy is the HTTP_PROXY value.
	// +optional
	// +kubebuilder:validation:Pattern=`^(https?|socks5)://[^/@\s\x00-\x1f\x7f]+(/[^\s\x00-\x1f\x7f]*)?$`
	HTTPProxy string `json:"httpProxy,omitempty"`
	// HTTPSProxy is the HTTPS_PROXY value.
	// +optional
	// +kubebuilder:validation:Pattern=`^(https?|socks5)://[^/@\s\x00-\x1f\x7f]+(/[^\s\x00-\x1f\x7f]*)?$`
	HTTPSProxy string `json:"httpsProxy,omitempty"`
	// NoProxy is the NO_PROXY value (comma-separated).
	// +optional
	NoProxy string `json:"noProxy,omitempty"`
}

// Runtime is a containerd CRI runtime handler.
type Runtime struct {
	// Name is the handler name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Type is the shim. Default "io.containerd.runc.v2".
	// +optional
	Type string `json:"type,omitempty"`
	// Options are the runtime's options table.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Options *apiextensionsv1.JSON `json:"options,omitempty"`
}

// StaticPod is an extra static pod manifest.
type StaticPod struct {
	// Name is the manifest's file name without ".yaml".
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Manifest is a v1 Pod in YAML or JSON.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Manifest string `json:"manifest"`
}

// ReportSpec says where the outcome report goes.
type ReportSpec struct {
	// Path of the JSON report. Default "/var/lib/machineadm/report.json"
	// (os windows: machineadm's Windows default, docs/windows.md); a
	// drive path is for os windows.
	// +optional
	// +kubebuilder:validation:Pattern=`^([A-Za-z]:)?[/\\][^\x00-\x1f\x7f]*$`
	Path string `json:"path,omitempty"`
	// Console also writes the human summary to the serial console.
	// Default true.
	// +optional
	Console *bool `json:"console,omitempty"`
	// Sentinel is the file created on success. Default
	// "/run/cluster-api/bootstrap-success.complete" (Cluster API's
	// bootstrap success sentinel); "-" disables it.
	// +optional
	// +kubebuilder:validation:Pattern=`^(-|([A-Za-z]:)?[/\\][^\x00-\x1f\x7f]*)$`
	Sentinel string `json:"sentinel,omitempty"`
	// URL receives the JSON report by HTTP(S) POST; no credentials.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://[^/@\s\x00-\x1f\x7f]+(/[^\s\x00-\x1f\x7f]*)?$`
	URL string `json:"url,omitempty"`
}
