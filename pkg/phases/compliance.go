package phases

import (
	"context"
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/compliance"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/evidence"
)

// Evidence is the compliance phase's verdicts (Result.Compliance), which
// the run records in the outcome report's compliance section.
type Evidence struct {
	// Profile is spec.security.profile.
	Profile compliance.Profile
	// Results are the verdicts, in the benchmark's order.
	Results []evidence.Result
	// DryRun says nothing was evaluated: Results are the checks a real
	// run evaluates (evidence.Planned), each NOT_EVALUATED.
	DryRun bool
}

// hintCompliance is the hint of a failed check.
const hintCompliance = "Read the report's compliance section: each FAIL names the check, what was found and what is wanted; fix the spec value that overrides the profile, or waive the ID in spec.security.waivers with a reason."

// CompliancePhase returns the phases of spec.security.profile, run after
// the node is made: harden (the file remediations that need kubeadm's
// files: kubelet config and unit modes, the etcd data directory's owner)
// and evidence (every check that concerns the node, recorded in the
// report; a FAIL not waived fails the run, class ComplianceFailed). Nil
// without a profile.
func CompliancePhase(cfg *machineadm.MachineBootstrapConfig) []Phase {
	sec := cfg.Spec.Security
	if sec == nil || sec.Profile == "" {
		return nil
	}
	return []Phase{{
		Name:  "compliance",
		Short: "Harden files kubeadm wrote and evaluate the " + sec.Profile + " checks of this node",
		Class: errclass.ComplianceFailed,
		Phases: []Phase{
			{Name: "harden", Short: "Kubelet config and unit files 0600, the etcd data directory owned by etcd", Class: errclass.HostPreparationFailed, Run: runHarden},
			{Name: "evidence", Short: "Evaluate the profile's checks on the live files and flags", Class: errclass.ComplianceFailed, Hint: hintCompliance, Check: true, Run: runEvidence},
		},
	}}
}

// evidenceNode describes the node for pkg/host/evidence.
func evidenceNode(d *Data) evidence.Node {
	s := &d.Config.Spec
	n := evidence.Node{Root: d.Root, ControlPlane: s.Role == machineadm.RoleControlPlane, CertificatesDir: machineadm.DefaultCertificatesDir}
	if cp := s.ControlPlane; cp != nil && n.ControlPlane {
		n.Systemd = cp.Runtime == machineadm.RuntimeSystemd
		if cp.PKI.CertificatesDir != "" {
			n.CertificatesDir = cp.PKI.CertificatesDir
		}
		if cp.Etcd.Local != nil {
			n.EtcdDataDir = cp.Etcd.Local.DataDir
		}
	}
	return n
}

func runHarden(ctx context.Context, d *Data) (Result, error) {
	changes, err := evidence.Harden(ctx, evidenceNode(d), nil, d.DryRun)
	return Result{Changed: len(changes) > 0, Changes: changes}, err
}

func runEvidence(_ context.Context, d *Data) (Result, error) {
	sec := d.Config.Spec.Security
	prof := compliance.Profile(sec.Profile)
	waivers := map[string]string{}
	for _, w := range sec.Waivers {
		waivers[w.ID] = w.Reason
	}
	if d.DryRun {
		// The node is not made: list what the real run evaluates.
		planned := evidence.Planned(evidenceNode(d), prof, waivers)
		return Result{
			Evidence: &Evidence{Profile: prof, Results: planned, DryRun: true},
			Message:  fmt.Sprintf("would evaluate %d %s checks of this node", len(planned), prof),
		}, nil
	}
	results := evidence.Evaluate(evidenceNode(d), prof, waivers)
	counts := map[evidence.Verdict]int{}
	var failed []string
	for _, r := range results {
		counts[r.Verdict]++
		if r.Failed() {
			failed = append(failed, r.Check.ID+" ("+r.Detail+")")
		}
	}
	res := Result{
		Evidence: &Evidence{Profile: prof, Results: results},
		Message: fmt.Sprintf("%s: %d PASS, %d FAIL, %d WARN, %d not applicable", prof,
			counts[evidence.Pass], counts[evidence.Fail], counts[evidence.Warn], counts[evidence.NotApplicable]),
	}
	if len(failed) > 0 {
		return res, errclass.New(errclass.ComplianceFailed, hintCompliance,
			fmt.Errorf("%s checks failed on this node: %s", prof, strings.Join(failed, "; ")))
	}
	return res, nil
}
