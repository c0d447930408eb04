package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// MachineadmControlPlaneSpec is the desired state of a control plane.
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || self.replicas % 2 == 1 || (has(self.machineadmConfigSpec.controlPlane) && has(self.machineadmConfigSpec.controlPlane.etcd) && has(self.machineadmConfigSpec.controlPlane.etcd.external))",message="must be odd with a stacked etcd: an even member count tolerates no more failures than one less",fieldPath=".replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.rollout) || !has(self.rollout.strategy) || !has(self.rollout.strategy.rollingUpdate) || !has(self.rollout.strategy.rollingUpdate.maxSurge) || self.rollout.strategy.rollingUpdate.maxSurge == 1 || (has(self.replicas) && self.replicas >= 3)",message="0 needs replicas >= 3: with fewer, removing a Machine before its replacement exists loses etcd quorum",fieldPath=".rollout.strategy.rollingUpdate.maxSurge"
// +kubebuilder:validation:XValidation:rule="(has(self.machineadmConfigSpec.controlPlane) && has(self.machineadmConfigSpec.controlPlane.etcd) && has(self.machineadmConfigSpec.controlPlane.etcd.external)) == (has(oldSelf.machineadmConfigSpec.controlPlane) && has(oldSelf.machineadmConfigSpec.controlPlane.etcd) && has(oldSelf.machineadmConfigSpec.controlPlane.etcd.external))",message="cannot switch between a stacked and an external etcd",fieldPath=".machineadmConfigSpec.controlPlane.etcd"
// +kubebuilder:validation:XValidation:rule="!has(self.machineadmConfigSpec.security) || !has(self.machineadmConfigSpec.security.profile) || (has(self.machineadmConfigSpec.controlPlane) && has(self.machineadmConfigSpec.controlPlane.apiServer) && has(self.machineadmConfigSpec.controlPlane.apiServer.encryption))",message="required under security.profile: every control plane encrypts Secrets at rest with the Cluster's one key; name it (a Secret) in an aescbc provider's keys[].secretFrom",fieldPath=".machineadmConfigSpec.controlPlane.apiServer.encryption"
type MachineadmControlPlaneSpec struct {
	// Replicas is the number of control-plane Machines. Default 1. With a
	// stacked etcd (the default) it must be odd.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=7
	Replicas *int32 `json:"replicas,omitempty"`

	// Version is the Kubernetes version of the control-plane Machines,
	// "v" and a semantic version, e.g. "v1.37.2". Changing it replaces
	// the Machines one at a time.
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-+][0-9A-Za-z.+-]+)?$`
	Version string `json:"version"`

	// MachineTemplate shapes the Machines: metadata, the infrastructure
	// template and the deletion timeouts.
	// +required
	MachineTemplate MachineTemplate `json:"machineTemplate"`

	// MachineadmConfigSpec is the spec of every control-plane Machine's
	// MachineadmConfig (bootstrap.machineadm.io): agent, recipients,
	// Kubernetes and control-plane settings (among them
	// controlPlane.runtime, StaticPods or Systemd), node, host and report.
	// Changing it replaces the Machines one at a time.
	// +required
	MachineadmConfigSpec bootstrapv1.MachineadmConfigSpec `json:"machineadmConfigSpec"`

	// Rollout says when and how Machines are replaced.
	// +optional
	Rollout Rollout `json:"rollout,omitempty,omitzero"`

	// Remediation bounds the replacement of Machines a
	// MachineHealthCheck marks unhealthy.
	// +optional
	Remediation Remediation `json:"remediation,omitempty,omitzero"`
}

// MachineTemplate is the template of the control-plane Machines.
type MachineTemplate struct {
	// ObjectMeta holds labels and annotations copied to each Machine (and
	// updated in place, without a rollout).
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	// Spec holds the Machines' infrastructure and deletion settings.
	// +required
	Spec MachineTemplateSpec `json:"spec"`
}

// MachineTemplateSpec is the Machine-level part of the template.
type MachineTemplateSpec struct {
	// InfrastructureRef is the infrastructure machine template each
	// Machine's infrastructure machine is cloned from, in the control
	// plane's namespace. Pointing it at another template replaces the
	// Machines.
	// +required
	InfrastructureRef clusterv1.ContractVersionedObjectReference `json:"infrastructureRef"`
	// Deletion holds the node drain, volume detach and Node deletion
	// timeouts, copied to each Machine's spec.deletion (in place).
	// +optional
	Deletion MachineDeletion `json:"deletion,omitempty,omitzero"`
}

// MachineDeletion holds the timeouts Cluster API applies when it deletes a
// control-plane Machine. Unset: Cluster API's Machine defaults.
// +kubebuilder:validation:MinProperties=1
type MachineDeletion struct {
	// NodeDrainTimeoutSeconds bounds the Node's drain, in seconds; 0
	// means no bound.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeDrainTimeoutSeconds *int32 `json:"nodeDrainTimeoutSeconds,omitempty"`
	// NodeVolumeDetachTimeoutSeconds bounds the wait for volumes to
	// detach, in seconds; 0 means no bound.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeVolumeDetachTimeoutSeconds *int32 `json:"nodeVolumeDetachTimeoutSeconds,omitempty"`
	// NodeDeletionTimeoutSeconds bounds the deletion of the Node, in
	// seconds; 0 retries forever. Cluster API's default is 10.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeDeletionTimeoutSeconds *int32 `json:"nodeDeletionTimeoutSeconds,omitempty"`
}

// Rollout says when and how Machines are replaced.
// +kubebuilder:validation:MinProperties=1
type Rollout struct {
	// After replaces every Machine created before this time (RFC 3339),
	// even without a spec change.
	// +optional
	After metav1.Time `json:"after,omitempty,omitzero"`
	// Before replaces Machines ahead of a deadline.
	// +optional
	Before RolloutBefore `json:"before,omitempty,omitzero"`
	// Strategy is how Machines are replaced.
	// +optional
	Strategy RolloutStrategy `json:"strategy,omitempty,omitzero"`
}

// RolloutBefore replaces Machines ahead of a deadline.
// +kubebuilder:validation:MinProperties=1
type RolloutBefore struct {
	// CertificatesExpiryDays replaces a Machine whose certificates expire
	// within this many days (Machine status.certificatesExpiryDate, as
	// Cluster API reads it from the machine.cluster.x-k8s.io/certificates-expiry
	// annotation). Minimum 7.
	// +optional
	// +kubebuilder:validation:Minimum=7
	CertificatesExpiryDays int32 `json:"certificatesExpiryDays,omitempty"`
}

// RolloutStrategy is how Machines are replaced: always one at a time.
// +kubebuilder:validation:MinProperties=1
type RolloutStrategy struct {
	// Type is the strategy; only "RollingUpdate" (the default).
	// +optional
	// +kubebuilder:validation:Enum=RollingUpdate
	Type string `json:"type,omitempty"`
	// RollingUpdate tunes the rolling update.
	// +optional
	RollingUpdate RollingUpdate `json:"rollingUpdate,omitempty,omitzero"`
}

// RollingUpdate tunes the rolling update.
// +kubebuilder:validation:MinProperties=1
type RollingUpdate struct {
	// MaxSurge is how many Machines above replicas may exist during a
	// rollout: 1 (default) creates the replacement first, then removes the
	// old Machine; 0 removes first (for when no spare capacity exists),
	// which needs replicas >= 3.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	MaxSurge *int32 `json:"maxSurge,omitempty"`
}

// Remediation bounds the replacement of unhealthy Machines.
// +kubebuilder:validation:MinProperties=1
type Remediation struct {
	// MaxRetry is how many times in a row a replacement may itself be
	// remediated (within MinHealthyPeriodSeconds of the previous
	// remediation) before remediation stops and waits for a person.
	// Default 3.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxRetry *int32 `json:"maxRetry,omitempty"`
	// RetryPeriodSeconds is the least time between two remediations, in
	// seconds. Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RetryPeriodSeconds *int32 `json:"retryPeriodSeconds,omitempty"`
	// MinHealthyPeriodSeconds: a Machine remediated later than this after
	// the previous remediation starts a new retry count. Default 3600.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinHealthyPeriodSeconds *int32 `json:"minHealthyPeriodSeconds,omitempty"`
}

// MachineadmControlPlaneStatus is the observed state, per the Cluster API
// control-plane contract v1beta2.
type MachineadmControlPlaneStatus struct {
	// Conditions: Available, CertificatesAvailable, EtcdClusterHealthy,
	// MachinesReady, MachinesUpToDate, MachinesBootstrapped, RollingOut,
	// ScalingUp, ScalingDown, Remediating, Deleting and Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Initialization holds the contract's provisioning signals.
	// +optional
	Initialization Initialization `json:"initialization,omitempty,omitzero"`

	// Selector selects the control plane's Machines, in label-selector
	// query syntax (scale subresource).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Selector string `json:"selector,omitempty"`

	// Replicas is the number of the control plane's Machines.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// ReadyReplicas counts Machines whose Ready condition is True.
	// +optional
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`
	// AvailableReplicas counts Machines whose Available condition is
	// True.
	// +optional
	AvailableReplicas *int32 `json:"availableReplicas,omitempty"`
	// UpToDateReplicas counts Machines that match the spec (version,
	// machine spec, infrastructure template, rollout deadlines).
	// +optional
	UpToDateReplicas *int32 `json:"upToDateReplicas,omitempty"`

	// Version is the lowest Kubernetes version among the Machines
	// (the contract's fallback for Versions).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Version string `json:"version,omitempty"`

	// Versions are the Kubernetes versions of the Machines with the number
	// of Machines at each, oldest first.
	// +optional
	// +listType=map
	// +listMapKey=version
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	Versions []clusterv1.StatusVersion `json:"versions,omitempty"`

	// LastRemediation is the last Machine remediated.
	// +optional
	LastRemediation *LastRemediation `json:"lastRemediation,omitempty"`

	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Initialization is the contract's initialization block.
// +kubebuilder:validation:MinProperties=1
type Initialization struct {
	// ControlPlaneInitialized is true once the first Machine's Node
	// exists (its API server answered kubeadm init); never reset.
	// +optional
	ControlPlaneInitialized *bool `json:"controlPlaneInitialized,omitempty"`
}

// LastRemediation records a remediation.
type LastRemediation struct {
	// Machine is the remediated Machine's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Machine string `json:"machine"`
	// Time is when it was remediated.
	Time metav1.Time `json:"time"`
	// RetryCount counts remediations in a row (0 for the first).
	// +kubebuilder:validation:Minimum=0
	RetryCount int32 `json:"retryCount"`
}

// MachineadmControlPlane manages a Cluster's control-plane Machines.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:path=machineadmcontrolplanes,scope=Namespaced,categories=cluster-api,shortName=mcp
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']"
// +kubebuilder:printcolumn:name="Initialized",type="boolean",JSONPath=".status.initialization.controlPlaneInitialized"
// +kubebuilder:printcolumn:name="Desired",type="integer",JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas"
// +kubebuilder:printcolumn:name="Ready",type="integer",JSONPath=".status.readyReplicas"
// +kubebuilder:printcolumn:name="Up-to-date",type="integer",JSONPath=".status.upToDateReplicas"
// +kubebuilder:printcolumn:name="Version",type="string",JSONPath=".spec.version"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type MachineadmControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MachineadmControlPlaneSpec   `json:"spec"`
	Status MachineadmControlPlaneStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the status conditions.
func (c *MachineadmControlPlane) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions replaces the status conditions.
func (c *MachineadmControlPlane) SetConditions(cs []metav1.Condition) { c.Status.Conditions = cs }

// MachineadmControlPlaneList is a list of MachineadmControlPlanes.
// +kubebuilder:object:root=true
type MachineadmControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineadmControlPlane `json:"items"`
}
