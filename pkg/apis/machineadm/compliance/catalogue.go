package compliance

import "slices"

// Profile names a benchmark a machine is made to comply with
// (spec.security.profile).
type Profile string

const (
	// CIS112 is the CIS Kubernetes Benchmark v1.12.0 (kube-bench's
	// cfg/cis-1.12, which kube-bench v0.15.6 maps to Kubernetes 1.32-1.34;
	// pass `--benchmark cis-1.12` for newer versions).
	CIS112 Profile = "cis-1.12"
	// STIG is the DISA Kubernetes Security Technical Implementation Guide,
	// Version 2, Release 2.
	STIG Profile = "stig"
)

// Profiles are the supported profiles, in the order the docs list them.
var Profiles = []Profile{CIS112, STIG}

// Benchmark is the full name of the benchmark p follows, "" for an
// unknown profile.
func Benchmark(p Profile) string {
	switch p {
	case CIS112:
		return "CIS Kubernetes Benchmark v1.12.0"
	case STIG:
		return "DISA Kubernetes STIG Version 2, Release 2"
	}
	return ""
}

// Scope is where a check looks: kube-bench's target names.
type Scope string

const (
	// ScopeMaster is the control-plane node's files and components (API
	// server, controller manager, scheduler).
	ScopeMaster Scope = "master"
	// ScopeEtcd is the local etcd member.
	ScopeEtcd Scope = "etcd"
	// ScopeControlPlane is control-plane configuration (authentication,
	// audit policy).
	ScopeControlPlane Scope = "controlplane"
	// ScopeNode is every node's kubelet and its files.
	ScopeNode Scope = "node"
	// ScopePolicies is the cluster's policies (RBAC, Pod Security, network
	// policies, secrets): never a node's.
	ScopePolicies Scope = "policies"
)

// How says how machineadm satisfies a check.
type How string

const (
	// HowMachineadm: the profile changes a setting or a file so the check
	// holds, and the evidence evaluates it on the node.
	HowMachineadm How = "machineadm"
	// HowKubeadm: kubeadm's own configuration already holds; the evidence
	// evaluates it on the node.
	HowKubeadm How = "kubeadm"
	// HowClusterPolicy: only a cluster policy (RBAC, admission, Pod
	// Security, network policy) can satisfy it; not a node's check.
	HowClusterPolicy How = "cluster-policy"
	// HowOperator: it depends on a choice or an environment only the
	// operator knows (an admission plugin that breaks air-gapped images,
	// the CNI's files, an organisation's review); the evidence evaluates it
	// when it has a probe, as a warning at most.
	HowOperator How = "operator"
)

// Check is one benchmark recommendation of a profile.
type Check struct {
	// ID is the benchmark's identifier: "1.2.5" (CIS), "V-242390" (STIG).
	ID string
	// Profile is the benchmark the ID belongs to.
	Profile Profile
	// Scope is where the check looks.
	Scope Scope
	// Automated is the benchmark's own marking: CIS "(Automated)" (scored
	// in kube-bench); STIG: a rule kube-bench automates. A failed manual
	// check is a warning, never a failure.
	Automated bool
	// Title says what the check wants, in one short line.
	Title string
	// How says how machineadm satisfies it.
	How How
	// Note says how (the setting or file machineadm writes) or why
	// machineadm cannot, for docs/compliance.md.
	Note string
	// Probe is what the evidence evaluates on the node; nil: the check is
	// not evaluated on a node (cluster policy, an operator's review).
	Probe *Probe
}

// Lookup returns the check id of profile p.
func Lookup(p Profile, id string) (Check, bool) {
	for _, c := range Checks(p) {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}

// Checks returns every check of profile p in the benchmark's order; nil
// for an unknown profile. The slice is shared: do not modify it.
func Checks(p Profile) []Check {
	switch p {
	case CIS112:
		return cisChecks()
	case STIG:
		return stigChecks()
	}
	return nil
}

// Known says whether p is a supported profile.
func Known(p Profile) bool { return slices.Contains(Profiles, p) }
