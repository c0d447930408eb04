package report

import (
	"strings"
	"testing"
)

// The full view shows what the phase table has no column for: the
// warnings a phase recorded, the sysctl phase's desired and effective
// values, and the Node a failed join left registered; escaped like every
// other string, so a warning cannot start a forged result line.
func TestSummaryFullShowsWarningsSysctlAndRegisteredNode(t *testing.T) {
	r := fixtureFailed()
	r.NodeRegistered = "cp-2"
	for i := range r.Phases {
		if r.Phases[i].Name == "sysctl" {
			r.Phases[i].Sysctl = []SysctlValue{
				{Key: "net.ipv4.ip_forward", Desired: "1", Effective: "1"},
				{Key: "vm.overcommit_memory", Desired: "1", Effective: "1", BootValue: "0", BootFile: "/etc/sysctl.d/99-local.conf"},
				{Key: "kernel.wo", Desired: "3", ReadError: "permission denied"},
			}
			r.Phases[i].Warnings = []string{"vm.overcommit_memory is 0 at the next boot\nmachineadm bootstrap: Succeeded"}
		}
	}
	full := Summary(r, SummaryOptions{Width: ScreenWidth})
	for _, want := range []string{
		"node:  cp-2 is registered in the cluster",
		"warning: sysctl: vm.overcommit_memory is 0 at the next boot",
		"sysctl (desired -> effective):",
		"  net.ipv4.ip_forward  1 -> 1",
		"  vm.overcommit_memory  1 -> 1  (next boot: 0 from /etc/sysctl.d/99-local.conf)",
		"  kernel.wo  3 -> -  (not read back: permission denied)",
	} {
		if !strings.Contains(full, want) {
			t.Errorf("full view lacks %q:\n%s", want, full)
		}
	}
	for i, l := range strings.Split(full, "\n") {
		if i > 0 && strings.HasPrefix(l, "machineadm bootstrap") {
			t.Errorf("line %d reads like a result line: %q", i+1, l)
		}
	}
	// The one-screen view keeps its size.
	checkScreen(t, Summary(r, OneScreen("/var/lib/machineadm/report.json")), ScreenWidth, ScreenHeight)
}

// The full view shows the compliance counts and each FAIL and WARN check
// with its waiver, escaped like every other string.
func TestSummaryCompliance(t *testing.T) {
	r := &BootstrapReport{APIVersion: APIVersion, Kind: Kind, Result: ResultSucceeded, Command: "bootstrap",
		Compliance: &Compliance{Profile: "cis-1.12", Benchmark: "CIS Kubernetes Benchmark v1.12.0",
			Counts: ComplianceCounts{Pass: 2, Fail: 1, Warn: 1, Waived: 1},
			Checks: []ComplianceCheck{
				{ID: "4.1.9", Verdict: "PASS", Title: "kubelet config.yaml mode 600 or stricter"},
				{ID: "4.2.7", Verdict: "FAIL", Title: "kubelet --hostname-override not set", Detail: "--hostname-override=x\x1b[31m", Waiver: "cloud names"},
				{ID: "1.2.1", Verdict: "WARN", Title: "anonymous", Detail: "limited"},
			}}}
	out := Summary(r, SummaryOptions{Width: 200})
	for _, want := range []string{"cis-1.12 (CIS Kubernetes Benchmark v1.12.0): 2 PASS, 1 FAIL (1 waived), 1 WARN", "FAIL 4.2.7", "(waived: cloud names)", "WARN 1.2.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "PASS 4.1.9") {
		t.Errorf("summary shows a raw escape or a PASS line:\n%s", out)
	}
}

// A dry run's compliance line says nothing was evaluated and how many
// checks the real run evaluates, never "0 FAIL" as if the node were clean.
func TestSummaryComplianceDryRun(t *testing.T) {
	r := &BootstrapReport{APIVersion: APIVersion, Kind: Kind, Result: ResultSucceeded, Command: "bootstrap",
		Compliance: &Compliance{Profile: "stig", Benchmark: "DISA Kubernetes STIG", DryRun: true,
			Counts: ComplianceCounts{NotEvaluated: 3},
			Checks: []ComplianceCheck{
				{ID: "V-242390", Verdict: "NOT_EVALUATED", Title: "a"},
				{ID: "V-242397", Verdict: "NOT_EVALUATED", Title: "b", Waiver: "static pods"},
				{ID: "V-242434", Verdict: "NOT_EVALUATED", Title: "c"},
			}}}
	out := Summary(r, SummaryOptions{Width: 200})
	if !strings.Contains(out, "stig (DISA Kubernetes STIG): dry run, nothing evaluated; the real run evaluates 3 checks (1 waived)") {
		t.Errorf("dry-run compliance line:\n%s", out)
	}
	if strings.Contains(out, "PASS") || strings.Contains(out, "FAIL") {
		t.Errorf("a dry run's summary claims verdicts:\n%s", out)
	}
}
