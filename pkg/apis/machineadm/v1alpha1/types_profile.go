package v1alpha1

// Security asks for a security profile: a benchmark the node is made to
// comply with, and the benchmark checks the machine is excused from.
// See docs/compliance.md.
type Security struct {
	// Profile is the benchmark: "cis-1.12" (the CIS Kubernetes Benchmark
	// v1.12.0) or "stig" (the DISA Kubernetes STIG Version 2, Release 2).
	// A profile changes defaults before anything runs (component flags,
	// kubelet configuration, kernel parameters; docs/compliance.md lists
	// each), hardens files kubeadm wrote after it ran, and then evaluates
	// every check that concerns this node against its live files and
	// flags; the outcome report's compliance section records each verdict.
	// A check that fails, and is not waived, fails the bootstrap (class
	// ComplianceFailed). A value the spec sets itself wins over the
	// profile's default. Linux only. Default: none (no profile, no checks).
	Profile string `json:"profile,omitempty"`
	// Waivers excuse checks of the profile, each with its reason: a waived
	// check that fails is reported as waived and does not fail the
	// bootstrap. Each ID must be a check of the profile, at most once.
	Waivers []Waiver `json:"waivers,omitempty"`
}

// Waiver excuses one benchmark check.
type Waiver struct {
	// ID is the check's benchmark identifier, as docs/compliance.md lists
	// it: "1.2.5" (cis-1.12), "V-242390" (stig). Required.
	ID string `json:"id"`
	// Reason says why the check does not apply or is accepted, for the
	// report and an auditor (at most 1024 characters, one line).
	// Required.
	Reason string `json:"reason"`
}
