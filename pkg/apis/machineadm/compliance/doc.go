// Package compliance is the catalogue of the security profiles a machine
// spec can ask for (spec.security.profile): each benchmark's check IDs,
// titles, scope and how machineadm satisfies each one, and the settings a
// profile applies (the remediations). It is data and pure functions: the
// spec's defaults (v1alpha1.SetDefaults) apply Remediation, validation
// checks waiver IDs against Lookup, the node's evidence (pkg/host/compliance)
// evaluates each check's Probe, and docs/compliance.md's table is generated
// from Checks (TestDocTable).
//
// Sources: the CIS Kubernetes Benchmark v1.12.0 as kube-bench v0.15.6 ships
// it (cfg/cis-1.12: master, etcd, controlplane, node, policies), and the
// DISA Kubernetes STIG Version 2, Release 2 (the rule IDs V-242376...
// V-245544; kube-bench's cfg/eks-stig-kubernetes-v1r6 carries the same
// IDs and titles for its subset).
package compliance
