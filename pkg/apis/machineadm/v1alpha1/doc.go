// Package v1alpha1 is version v1alpha1 of the machineadm machine spec
// (apiVersion machineadm.io/v1alpha1, kind MachineBootstrapConfig).
//
// A released version is frozen: fields are never renamed, removed or given
// new meanings here. A later version (v1alpha2, …) is added beside this one
// with its own types, defaults and a conversion to the hub types in package
// machineadm; `machineadm config migrate` rewrites specs from this version to
// the newest.
//
// Fields that hold or point at a secret carry a `secret:"…"` struct tag
// (and every SecretSource field one naming its format); machineadm.SecretFields
// reads them. The tags are not part of the JSON form, so adding one does
// not change a released version.
//
// Changelog:
//   - v1alpha1: first version. Role/action, Kubernetes cluster settings,
//     control-plane components and PKI references, bootstrap-token join,
//     node registration and kubelet configuration, host preparation
//     (sysctl, kernel modules, files, containerd, static pods) and report
//     destinations.
package v1alpha1

// GroupName is the API group of machineadm's machine spec.
const GroupName = "machineadm.io"

// Version is this package's API version.
const Version = "v1alpha1"

// APIVersion is the apiVersion value of documents of this version:
// "machineadm.io/v1alpha1".
const APIVersion = GroupName + "/" + Version

// Kind is the kind of the machine spec document.
const Kind = "MachineBootstrapConfig"
