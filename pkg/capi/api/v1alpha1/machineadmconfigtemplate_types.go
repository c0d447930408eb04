package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MachineadmConfigTemplateSpec holds the template a MachineDeployment or
// MachineSet stamps MachineadmConfigs from.
type MachineadmConfigTemplateSpec struct {
	// Template is the MachineadmConfig to create.
	Template MachineadmConfigTemplateResource `json:"template"`
}

// MachineadmConfigTemplateResource is the template's content.
type MachineadmConfigTemplateResource struct {
	// ObjectMeta holds labels and annotations copied to each config.
	// +optional
	ObjectMeta TemplateMeta `json:"metadata,omitempty,omitzero"`
	// Spec is the MachineadmConfig spec.
	Spec MachineadmConfigSpec `json:"spec"`
}

// TemplateMeta is the metadata a template copies (labels and annotations).
type TemplateMeta struct {
	// Labels copied to each MachineadmConfig.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations copied to each MachineadmConfig.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// MachineadmConfigTemplate is a template of MachineadmConfigs.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=machineadmconfigtemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
type MachineadmConfigTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec MachineadmConfigTemplateSpec `json:"spec"`
}

// MachineadmConfigTemplateList is a list of MachineadmConfigTemplates.
// +kubebuilder:object:root=true
type MachineadmConfigTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineadmConfigTemplate `json:"items"`
}
