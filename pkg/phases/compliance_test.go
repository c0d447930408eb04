package phases

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
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
