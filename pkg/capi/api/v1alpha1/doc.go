// Package v1alpha1 is the API of machineadm's Cluster API bootstrap
// provider, group bootstrap.machineadm.io, version v1alpha1: the
// MachineadmConfig and MachineadmConfigTemplate kinds.
//
// A MachineadmConfig holds the node-level part of a machineadm machine spec
// (machineadm.io/v1alpha1 MachineBootstrapConfig): node registration and
// kubelet, host preparation, containerd, files, static pods and the report.
// The role, the action (init or join) and the join details are not in it:
// the controller derives them from the owning Machine and its Cluster.
// Field names and shapes match the machine spec's, so a spec field keeps its
// name here; see docs/cluster-api.md for the mapping from
// KubeadmConfigSpec.
//
// The status follows the Cluster API bootstrap contract v1beta2
// (dataSecretName, initialization.dataSecretCreated, conditions).
//
// +kubebuilder:object:generate=true
// +groupName=bootstrap.machineadm.io
package v1alpha1
