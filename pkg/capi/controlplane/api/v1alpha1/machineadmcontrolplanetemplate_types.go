package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// MachineadmControlPlaneTemplateSpec holds the template a ClusterClass
// stamps MachineadmControlPlanes from.
type MachineadmControlPlaneTemplateSpec struct {
	// Template is the MachineadmControlPlane to create.
	Template MachineadmControlPlaneTemplateResource `json:"template"`
}

// MachineadmControlPlaneTemplateResource is the template's content.
type MachineadmControlPlaneTemplateResource struct {
	// ObjectMeta holds labels and annotations copied to the control plane.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	// Spec is the control plane's spec without what the Cluster's
	// topology sets (replicas, version, the infrastructure template).
	Spec MachineadmControlPlaneTemplateResourceSpec `json:"spec"`
}

// MachineadmControlPlaneTemplateResourceSpec is MachineadmControlPlaneSpec
// without replicas, version and machineTemplate.spec.infrastructureRef,
// which a ClusterClass topology fills in.
type MachineadmControlPlaneTemplateResourceSpec struct {
	// MachineTemplate holds the Machines' metadata and deletion timeouts.
	// +optional
	MachineTemplate *TemplateMachineTemplate `json:"machineTemplate,omitempty"`
	// MachineadmConfigSpec is as in MachineadmControlPlaneSpec.
	// +required
	MachineadmConfigSpec bootstrapv1.MachineadmConfigSpec `json:"machineadmConfigSpec"`
	// Runtime is as in MachineadmControlPlaneSpec.
	// +optional
	Runtime Runtime `json:"runtime,omitempty"`
	// Rollout is as in MachineadmControlPlaneSpec.
	// +optional
	Rollout Rollout `json:"rollout,omitempty,omitzero"`
	// Remediation is as in MachineadmControlPlaneSpec.
	// +optional
	Remediation Remediation `json:"remediation,omitempty,omitzero"`
}

// TemplateMachineTemplate is MachineTemplate without the infrastructure
// reference.
type TemplateMachineTemplate struct {
	// ObjectMeta holds labels and annotations copied to each Machine.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	// Spec holds the deletion timeouts.
	// +optional
	Spec TemplateMachineTemplateSpec `json:"spec,omitempty,omitzero"`
}

// TemplateMachineTemplateSpec holds the deletion timeouts.
type TemplateMachineTemplateSpec struct {
	// Deletion is as in MachineTemplateSpec.
	// +optional
	Deletion MachineDeletion `json:"deletion,omitempty,omitzero"`
}

// MachineadmControlPlaneTemplate is a template of MachineadmControlPlanes
// for ClusterClasses.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=machineadmcontrolplanetemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
type MachineadmControlPlaneTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec MachineadmControlPlaneTemplateSpec `json:"spec"`
}

// MachineadmControlPlaneTemplateList is a list of
// MachineadmControlPlaneTemplates.
// +kubebuilder:object:root=true
type MachineadmControlPlaneTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineadmControlPlaneTemplate `json:"items"`
}
