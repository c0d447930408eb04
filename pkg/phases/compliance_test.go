package phases

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/compliance"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/evidence"
)

// A profile adds compliance/harden and compliance/evidence after
// everything else; no profile adds nothing.
func TestCompliancePhasesInTree(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleWorker, Action: machineadm.ActionJoin}}
	if got := CompliancePhase(cfg); got != nil {
		t.Fatalf("no profile: %v", got)
	}
	cfg.Spec.Security = &machineadm.Security{Profile: "cis-1.12"}
	w := Bootstrap(cfg)
	last := w.Phases[len(w.Phases)-1]
	if last.Name != "compliance" || len(last.Phases) != 2 || last.Phases[0].Name != "harden" || last.Phases[1].Name != "evidence" {
		t.Fatalf("last phase %+v", last)
	}
	if last.Phases[1].Class != errclass.ComplianceFailed || !last.Phases[1].Check {
		t.Errorf("evidence: class %s, check %v", last.Phases[1].Class, last.Phases[1].Check)
	}
}

// The evidence of a worker whose kubelet config is kubeadm's 0644 fails
// with ComplianceFailed and records the verdicts; a waiver of 4.1.9 lets
// it pass with the verdict kept.
func TestEvidenceFailsUnlessWaived(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "var/lib/kubelet/config.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("authentication: {anonymous: {enabled: false}, x509: {clientCAFile: /ca.crt}}\nauthorization: {mode: Webhook}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleWorker, Action: machineadm.ActionJoin,
		Security: &machineadm.Security{Profile: "cis-1.12"}}}
	d := &Data{Config: cfg, Root: root}
	res, err := runEvidence(context.Background(), d)
	if c, _ := errclass.Of(err); c != errclass.ComplianceFailed || !strings.Contains(err.Error(), "4.1.9") {
		t.Fatalf("error %v (class %s), want ComplianceFailed naming 4.1.9", err, c)
	}
	if res.Evidence == nil || len(res.Evidence.Results) == 0 {
		t.Fatalf("no verdicts recorded with the failure")
	}
	cfg.Spec.Security.Waivers = []machineadm.Waiver{{ID: "4.1.9", Reason: "test"}}
	if _, err := runEvidence(context.Background(), d); err != nil && strings.Contains(err.Error(), "4.1.9") {
		t.Errorf("waived 4.1.9 still fails: %v", err)
	}
}

// A dry run evaluates nothing (the node is not made) and says so: its
// evidence lists the checks the real run evaluates on this node, each
// NOT_EVALUATED with the spec's waiver, the control plane's master checks
// only on a control plane; it never fails, whatever the root holds.
func TestEvidenceDryRunPlans(t *testing.T) {
	plan := func(role machineadm.Role) *Evidence {
		t.Helper()
		cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: role, Action: machineadm.ActionJoin,
			Security: &machineadm.Security{Profile: "cis-1.12", Waivers: []machineadm.Waiver{{ID: "4.1.9", Reason: "test"}}}}}
		res, err := runEvidence(context.Background(), &Data{Config: cfg, Root: t.TempDir(), DryRun: true})
		if err != nil {
			t.Fatalf("%s: dry run: %v", role, err)
		}
		if res.Evidence == nil || !res.Evidence.DryRun || len(res.Evidence.Results) == 0 {
			t.Fatalf("%s: dry-run evidence %+v, want planned checks", role, res.Evidence)
		}
		return res.Evidence
	}
	w, cp := plan(machineadm.RoleWorker), plan(machineadm.RoleControlPlane)
	ids := map[string]bool{}
	for _, r := range w.Results {
		if r.Verdict != evidence.NotEvaluated || r.Detail != evidence.PlannedDetail {
			t.Errorf("worker %s: %s %q, want NOT_EVALUATED", r.Check.ID, r.Verdict, r.Detail)
		}
		if r.Check.Scope != compliance.ScopeNode {
			t.Errorf("worker plans %s of scope %s", r.Check.ID, r.Check.Scope)
		}
		if (r.Check.ID == "4.1.9") != (r.Waiver != "") {
			t.Errorf("worker %s: waiver %q", r.Check.ID, r.Waiver)
		}
		ids[r.Check.ID] = true
	}
	if !ids["4.1.9"] {
		t.Error("worker: 4.1.9 not planned")
	}
	master := false
	for _, r := range cp.Results {
		master = master || r.Check.ID == "1.2.27"
	}
	if !master || len(cp.Results) <= len(w.Results) {
		t.Errorf("control plane plans %d checks (1.2.27 among them: %v), worker %d", len(cp.Results), master, len(w.Results))
	}
}
