package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is controlplane.machineadm.io/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "controlplane.machineadm.io", Version: "v1alpha1"}

var schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

// AddToScheme registers MachineadmControlPlane,
// MachineadmControlPlaneTemplate and their lists with a scheme.
var AddToScheme = schemeBuilder.AddToScheme

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&MachineadmControlPlane{}, &MachineadmControlPlaneList{},
		&MachineadmControlPlaneTemplate{}, &MachineadmControlPlaneTemplateList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
