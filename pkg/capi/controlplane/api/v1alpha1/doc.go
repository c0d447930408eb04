// Package v1alpha1 is the API of machineadm's Cluster API control-plane
// provider, group controlplane.machineadm.io, version v1alpha1: the
// MachineadmControlPlane and MachineadmControlPlaneTemplate kinds.
//
// A MachineadmControlPlane owns a Cluster's control-plane Machines: it
// creates them (each with a MachineadmConfig of the bootstrap provider,
// bootstrap.machineadm.io), scales them, replaces them on a change of
// version, machine spec or infrastructure template, and remediates the ones
// a MachineHealthCheck marks unhealthy, keeping etcd's quorum. Its spec and
// status follow Cluster API's control-plane contract v1beta2 (replicas,
// version, machineTemplate, status.initialization, the replica counters,
// selector and conditions); the field layout follows the kubeadm
// control-plane provider's v1beta2 API where the concepts are the same.
//
// +kubebuilder:object:generate=true
// +groupName=controlplane.machineadm.io
package v1alpha1
