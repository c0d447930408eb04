package report

// Compliance is the evidence of spec.security.profile on this node: every
// check of the profile that concerns the node, evaluated by machineadm
// after the node was made, against the live files (modes, owners), the
// flags of etcd, the control-plane components and the kubelet (static pod
// manifests or Systemd units, kubeadm-flags.env) and the kubelet's
// configuration file. docs/compliance.md lists the checks.
type Compliance struct {
	// Profile is spec.security.profile: "cis-1.12" or "stig".
	Profile string `json:"profile"`
	// Benchmark is the benchmark's full name, for example "CIS
	// Kubernetes Benchmark v1.12.0".
	Benchmark string `json:"benchmark" show:"line"`
	// DryRun is true in a dry run's report: the node was not made and
	// nothing was evaluated. Checks then lists the checks the real run
	// evaluates on this node, each with verdict NOT_EVALUATED (counted in
	// Counts.NotEvaluated; every other count is 0). Absent otherwise.
	DryRun bool `json:"dryRun,omitempty"`
	// Counts are how many checks had each verdict.
	Counts ComplianceCounts `json:"counts"`
	// Checks are the evaluated checks (a dry run: the planned ones), in
	// the benchmark's order.
	Checks []ComplianceCheck `json:"checks,omitempty"`
}

// ComplianceCounts counts a Compliance section's checks by verdict.
// Waived counts the FAIL verdicts the spec waives (included in Fail).
type ComplianceCounts struct {
	Pass          int `json:"pass"`
	Fail          int `json:"fail"`
	Warn          int `json:"warn"`
	NotApplicable int `json:"notApplicable"`
	Waived        int `json:"waived"`
	// NotEvaluated counts a dry run's planned checks (DryRun); absent
	// otherwise.
	NotEvaluated int `json:"notEvaluated,omitempty"`
}

// ComplianceCheck is one check's verdict on this node.
type ComplianceCheck struct {
	// ID is the benchmark's identifier: "1.2.5", "V-242390".
	ID string `json:"id" show:"line"`
	// Scope is where the check looks: master, etcd, controlplane, node.
	Scope string `json:"scope"`
	// Automated is the benchmark's marking; a manual check that does not
	// hold is WARN, never FAIL.
	Automated bool `json:"automated"`
	// Verdict is PASS, FAIL, WARN or NOT_APPLICABLE; NOT_EVALUATED in a
	// dry run (Compliance.DryRun).
	Verdict string `json:"verdict"`
	// Title says what the check wants.
	Title string `json:"title" show:"line"`
	// Detail says what was found: a path and its mode or owner, a flag
	// and its value.
	Detail string `json:"detail,omitempty" show:"text"`
	// Waiver is the spec's reason for waiving the check (a waived FAIL
	// does not fail the bootstrap). Empty when not waived.
	Waiver string `json:"waiver,omitempty" show:"text"`
}

// ComplianceVerdicts are the verdicts a ComplianceCheck may carry.
var ComplianceVerdicts = []string{"PASS", "FAIL", "WARN", "NOT_APPLICABLE", "NOT_EVALUATED"}

// Compliance records the compliance section; a later call replaces it.
// Nothing happens once the report is being written.
func (r *Recorder) Compliance(c *Compliance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finishing || c == nil {
		return
	}
	cp := *c
	cp.Checks = append([]ComplianceCheck(nil), c.Checks...)
	r.rep.Compliance = &cp
}
