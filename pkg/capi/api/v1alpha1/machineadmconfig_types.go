package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Format is the bootstrap data format the infrastructure provider hands to
// the machine's OS bootstrapper.
// +kubebuilder:validation:Enum=cloud-config;ignition;powershell;cloudbase-init;unattend
type Format string

const (
	// FormatCloudConfig is a cloud-init "#cloud-config" document (the
	// default for os linux).
	FormatCloudConfig Format = "cloud-config"
	// FormatIgnition is an Ignition 3.x config.
	FormatIgnition Format = "ignition"
	// FormatPowerShell is a first-boot PowerShell script, the
	// "#ps1_sysnative" user data cloudbase-init runs (os windows; the
	// default there).
	FormatPowerShell Format = "powershell"
	// FormatCloudbaseInit is a "#cloud-config" document for
	// cloudbase-init (write_files and runcmd only) that writes the spec
	// and the PowerShell stub and runs the stub (os windows).
	FormatCloudbaseInit Format = "cloudbase-init"
	// FormatUnattend is a Windows answer file (unattend.xml) whose
	// specialize pass writes and runs the PowerShell stub (os windows).
	FormatUnattend Format = "unattend"
)

// OS is the operating system of a Machine: "linux" or "windows" (machine
// spec field spec.os).
// +kubebuilder:validation:Enum=linux;windows
type OS string

const (
	// OSLinux is a Linux Machine (the default).
	OSLinux OS = "linux"
	// OSWindows is a Windows worker Machine.
	OSWindows OS = "windows"
)

// MachineadmConfigSpec is the node-level part of a machine spec. Role,
// action, Kubernetes version, cluster name, endpoint, networking and the
// join credentials come from the Machine and its Cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.ignitionVersion) || (has(self.format) && self.format == 'ignition')",message="ignitionVersion only applies to format ignition",fieldPath=".ignitionVersion"
// +kubebuilder:validation:XValidation:rule="!has(self.format) || (self.format == 'powershell' || self.format == 'cloudbase-init' || self.format == 'unattend') == (has(self.os) && self.os == 'windows')",message="formats powershell, cloudbase-init and unattend are for os windows, cloud-config and ignition for os linux",fieldPath=".format"
// +kubebuilder:validation:XValidation:rule="!(has(self.os) && self.os == 'windows') || !has(self.controlPlane)",message="a Windows Machine is a worker: kubeadm runs no control plane on Windows",fieldPath=".controlPlane"
// +kubebuilder:validation:XValidation:rule="!(has(self.os) && self.os == 'windows') || !has(self.host) || !has(self.host.files) || self.host.files.all(f, !has(f.owner) && !has(f.group))",message="file owners and groups have no meaning on Windows (os windows): leave owner and group out",fieldPath=".host.files"
// +kubebuilder:validation:XValidation:rule="(has(self.os) && self.os == 'windows') || !has(self.host) || !has(self.host.files) || self.host.files.all(f, f.path.startsWith('/'))",message="a Linux file path is absolute (starts with /); drive paths are for os windows",fieldPath=".host.files"
// +kubebuilder:validation:XValidation:rule="!(has(self.os) && self.os == 'windows') || !has(self.host) || !has(self.host.sysctl)",message="kernel parameters are Linux-only",fieldPath=".host.sysctl"
// +kubebuilder:validation:XValidation:rule="!(has(self.os) && self.os == 'windows') || !has(self.host) || !has(self.host.kernelModules)",message="kernel modules are Linux-only",fieldPath=".host.kernelModules"
// +kubebuilder:validation:XValidation:rule="!(has(self.os) && self.os == 'windows') || !has(self.host) || !has(self.host.domainJoin) || !has(self.host.domainJoin.linux)",message="Linux-only options (adcli keytab, krb5.conf, sssd.conf); Windows keeps its machine account secret itself",fieldPath=".host.domainJoin.linux"
// +kubebuilder:validation:XValidation:rule="(has(self.os) && self.os == 'windows') || !has(self.host) || !has(self.host.domainJoin) || !has(self.host.domainJoin.offlineJoinBlobFrom)",message="offline domain join (djoin) is Windows-only (os windows); a Linux Machine joins with credentials (adcli)",fieldPath=".host.domainJoin.offlineJoinBlobFrom"
// +kubebuilder:validation:XValidation:rule="!has(self.controlPlane) || !has(self.controlPlane.runtime) || self.controlPlane.runtime != 'Systemd' || !has(self.host) || !has(self.host.staticPods)",message="runtime Systemd runs no static pods",fieldPath=".host.staticPods"
type MachineadmConfigSpec struct {
	// OS is the Machine's operating system: "linux" (default) or
	// "windows" (machine spec field spec.os). A Windows Machine is a
	// worker; its format is powershell (default), cloudbase-init or
	// unattend; file owners
	// and groups, sysctl, kernel modules and domainJoin.linux are refused
	// at admission; its Node name (and the computer name its
	// infrastructure should give it) is the Machine's name mapped into
	// Windows' 15-character limit (docs/cluster-api.md, "Windows
	// Machines").
	// +optional
	OS OS `json:"os,omitempty"`

	// Format of the bootstrap data: "cloud-config" (default for os
	// linux), "ignition", or for os windows "powershell" (default there),
	// "cloudbase-init" or "unattend".
	// +optional
	Format Format `json:"format,omitempty"`

	// UserDataLimit is the most bootstrap data the infrastructure
	// provider takes as user data (R16): a preset, "aws" (16384 bytes),
	// "azure" (65536), "openstack" (65535 bytes of base64) or "vsphere"
	// (65536 bytes of base64), or a number of bytes. When the rendered
	// data is larger, the controller keeps the sealed machine spec in the
	// data Secret (key "payload") and serves it from its payload endpoint
	// (machineadm-controller --report-url, /payloads/...), and the data
	// holds only the stub, which fetches the spec from there and checks
	// its SHA-256 before use. Without the endpoint such data is
	// DataTooLarge. Default: no limit (the spec travels in the data).
	// +optional
	// +kubebuilder:validation:Pattern=`^(aws|azure|openstack|vsphere|[1-9][0-9]{0,7})$`
	UserDataLimit string `json:"userDataLimit,omitempty"`

	// IgnitionVersion is the Ignition config spec version for format
	// ignition, "3.1.0" to "3.5.0". Default: machineadm's default (see
	// docs/render.md).
	// +optional
	// +kubebuilder:validation:Pattern=`^3\.[1-5](\.0)?$`
	IgnitionVersion string `json:"ignitionVersion,omitempty"`

	// Agent says where the machine gets the machineadm binary. Default
	// (no agent, or no agent.url): the build machineadm-controller serves
	// from the management cluster (its --agent-url), pinned by digest and
	// signature; the config is refused when the controller serves none.
	// +optional
	Agent AgentSource `json:"agent,omitempty,omitzero"`

	// Recipients are the sealing recipients: every secret in the bootstrap
	// data (CA keys, bootstrap token, certificate key, and the values the
	// config takes from Secrets: file contents, client keys) is sealed so that
	// any one of them, and nobody else, can open it. Each is a recipient
	// string as `machineadm keygen` prints it: "hpke:<suite>:<key>",
	// "tpm2:…" or "age1…".
	// Required: a config without recipients never gets bootstrap data.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=4096
	// +kubebuilder:validation:items:Pattern=`^(hpke:|tpm2:|age1)[^\s\x00-\x1f\x7f]+$`
	// +listType=set
	Recipients []string `json:"recipients"`

	// Kubernetes holds the cluster-wide settings that are not on the
	// Cluster object. Used by control-plane Machines.
	// +optional
	Kubernetes KubernetesSpec `json:"kubernetes,omitempty,omitzero"`

	// ControlPlane holds control-plane component settings; only used when
	// the Machine is a control-plane Machine.
	// +optional
	ControlPlane *ControlPlaneSpec `json:"controlPlane,omitempty"`

	// Node holds the node's registration and kubelet settings (machine
	// spec field spec.node, without name: the node takes its host name).
	// +optional
	Node NodeSpec `json:"node,omitempty,omitzero"`

	// Host holds host preparation (machine spec field spec.host).
	// +optional
	Host HostSpec `json:"host,omitempty,omitzero"`

	// Report says where the outcome report goes (machine spec field
	// spec.report).
	// +optional
	Report ReportSpec `json:"report,omitempty,omitzero"`
	// Security is the compliance profile and its waivers (machine spec
	// field spec.security; docs/compliance.md). The outcome's compliance
	// counts report its evidence.
	// +optional
	Security *Security `json:"security,omitempty"`
}

// AgentSource is where the stub gets the machineadm binary: a URL pinned
// by SHA-256, a container registry blob, a file already in the machine
// image, or (no url) the build machineadm-controller serves.
// +kubebuilder:validation:XValidation:rule="!has(self.url) || self.url.startsWith('file:///') || self.url.startsWith('oci://') || self.url.matches('/v2/.+/blobs/sha256:[0-9a-f]{64}$') || has(self.sha256)",message="sha256 is required for an http(s) agent url",fieldPath=".sha256"
// +kubebuilder:validation:XValidation:rule="!has(self.url) || !has(self.architecture)",message="architecture only applies without url (the build machineadm-controller serves)",fieldPath=".architecture"
type AgentSource struct {
	// URL is an http(s) URL to download the agent from, a container
	// registry blob (oci://REGISTRY/REPOSITORY@sha256:HEX, or its
	// http(s)://REGISTRY/v2/REPOSITORY/blobs/sha256:HEX URL; the stub
	// answers the registry's anonymous Bearer challenge), or a file:///
	// URL of an agent already in the machine image. Default: the build
	// machineadm-controller serves.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^(https?://[^/@\s\x00-\x1f\x7f]+(/[^\s\x00-\x1f\x7f]*)?|oci://[^/@\s\x00-\x1f\x7f]+/[^\s\x00-\x1f\x7f]+|file:///[^\s\x00-\x1f\x7f]*)$`
	URL string `json:"url,omitempty"`
	// SHA256 is the agent's hex SHA-256 digest (64 lower-case hex
	// digits). Required for http(s) URLs other than registry blob URLs;
	// a registry blob's digest is in its reference.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256,omitempty"`
	// Architecture selects the build machineadm-controller serves when
	// url is empty: "amd64" (default) or "arm64". The Machine's
	// infrastructure decides it; Cluster API does not say it.
	// +optional
	// +kubebuilder:validation:Enum=amd64;arm64
	Architecture string `json:"architecture,omitempty"`
}

// KubernetesSpec holds cluster-wide settings not carried by the Cluster.
type KubernetesSpec struct {
	// ImageRepository is the registry prefix of the control-plane images.
	// Default "registry.k8s.io". Machine spec field
	// spec.kubernetes.imageRepository.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9._-]+)*$`
	ImageRepository string `json:"imageRepository,omitempty"`
	// FeatureGates enables or disables kubeadm feature gates by name.
	// +optional
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// MachineadmConfigStatus is the observed state, per the Cluster API
// bootstrap contract v1beta2.
type MachineadmConfigStatus struct {
	// Conditions: Ready, DataSecretAvailable, BootstrapSucceeded and
	// Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Initialization holds the contract's provisioning signals.
	// +optional
	Initialization MachineadmConfigInitializationStatus `json:"initialization,omitempty,omitzero"`

	// DataSecretName is the name of the Secret (in the config's namespace)
	// that holds the bootstrap data under key "value" and its format under
	// key "format".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DataSecretName string `json:"dataSecretName,omitempty"`

	// Outcome is the bootstrap outcome the node reported, mirrored from
	// its Node's machineadm.io/bootstrap-report annotation.
	// +optional
	Outcome *BootstrapOutcome `json:"outcome,omitempty"`

	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// MachineadmConfigInitializationStatus is the contract's initialization
// block.
// +kubebuilder:validation:MinProperties=1
type MachineadmConfigInitializationStatus struct {
	// DataSecretCreated is true once the data Secret exists; it is never
	// reset.
	// +optional
	DataSecretCreated *bool `json:"dataSecretCreated,omitempty"`
}

// BootstrapOutcome is a node's reported outcome.
type BootstrapOutcome struct {
	// Result is "Succeeded" or "Failed".
	Result string `json:"result"`
	// FailedPhase is the phase that failed, for example
	// "kubelet-start".
	// +optional
	FailedPhase string `json:"failedPhase,omitempty"`
	// ErrorClass is the failure's class, for example
	// "VerificationFailed".
	// +optional
	ErrorClass string `json:"errorClass,omitempty"`
	// Hint says what to check.
	// +optional
	Hint string `json:"hint,omitempty"`
	// DurationMs is how long the bootstrap ran, in milliseconds.
	// +optional
	DurationMs int64 `json:"durationMs,omitempty"`
	// MachineadmVersion is the agent's version.
	// +optional
	MachineadmVersion string `json:"machineadmVersion,omitempty"`
	// Compliance counts the verdicts of the spec's security profile on
	// the node, as the report's compliance section does, for example
	// "cis-1.12: 58 pass, 0 fail, 6 warn, 3 not applicable, 0 waived".
	// Empty without a profile.
	// +optional
	Compliance string `json:"compliance,omitempty"`
}

// MachineadmConfig is the bootstrap configuration of one Cluster API
// Machine.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=machineadmconfigs,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']"
// +kubebuilder:printcolumn:name="Data secret",type="string",JSONPath=".status.dataSecretName"
// +kubebuilder:printcolumn:name="Bootstrapped",type="string",JSONPath=".status.conditions[?(@.type==\"BootstrapSucceeded\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type MachineadmConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MachineadmConfigSpec   `json:"spec"`
	Status MachineadmConfigStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the status conditions.
func (c *MachineadmConfig) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions replaces the status conditions.
func (c *MachineadmConfig) SetConditions(cs []metav1.Condition) { c.Status.Conditions = cs }

// MachineadmConfigList is a list of MachineadmConfigs.
// +kubebuilder:object:root=true
type MachineadmConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineadmConfig `json:"items"`
}
