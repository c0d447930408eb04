//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
)

// outcomeReport is the part of machineadm's outcome report
// (machineadm.io/v1alpha1 BootstrapReport, docs/report.md) the scenarios
// check. It is decoded from the JSON a machine wrote, as an operator's tool
// would, not shared with pkg/report, so a renamed field fails the test.
type outcomeReport struct {
	APIVersion  string        `json:"apiVersion"`
	Kind        string        `json:"kind"`
	Result      string        `json:"result"`
	StartTime   time.Time     `json:"startTime"`
	EndTime     time.Time     `json:"endTime"`
	FailedPhase string        `json:"failedPhase"`
	ErrorClass  string        `json:"errorClass"`
	Hint        string        `json:"hint"`
	Error       string        `json:"error"`
	Phases      []reportPhase `json:"phases"`
	LogTail     []string      `json:"logTail"`
}

type reportPhase struct {
	Name       string `json:"name"`
	Status     string `json:"status"`
	DurationMs int64  `json:"durationMs"`
	Message    string `json:"message"`
}

// readReport reads the outcome report a machine wrote.
func readReport(m *Machine) (*outcomeReport, []byte, error) {
	raw, err := m.ReadFile(reportPath)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: outcome report: %w", m.Name, err)
	}
	var r outcomeReport
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, raw, fmt.Errorf("%s: outcome report: %w", m.Name, err)
	}
	if r.APIVersion != "machineadm.io/v1alpha1" || r.Kind != "BootstrapReport" {
		return nil, raw, fmt.Errorf("%s: outcome report is %s %s, want machineadm.io/v1alpha1 BootstrapReport", m.Name, r.APIVersion, r.Kind)
	}
	return &r, raw, nil
}

// summary is a one-line view of the report for test output.
func (r *outcomeReport) summary() string {
	if r.Result == "Succeeded" {
		return fmt.Sprintf("result=Succeeded phases=%d duration=%s%s", len(r.Phases), r.EndTime.Sub(r.StartTime).Round(time.Second), r.slowLeaves())
	}
	return fmt.Sprintf("result=%s errorClass=%s failedPhase=%s hint=%q error=%q\nlog tail:\n  %s",
		r.Result, r.ErrorClass, r.FailedPhase, r.Hint, r.Error, strings.Join(r.LogTail, "\n  "))
}

// checkSucceeded returns an error unless the report says Succeeded, lists
// every phase in want, and none of its phases failed.
func (r *outcomeReport) checkSucceeded(want []string) error {
	if r.Result != "Succeeded" {
		return fmt.Errorf("report: %s", r.summary())
	}
	seen := map[string]string{}
	for _, p := range r.Phases {
		seen[p.Name] = p.Status
		if p.Status == "Failed" {
			return fmt.Errorf("report Succeeded but phase %s Failed", p.Name)
		}
	}
	var missing []string
	for _, w := range want {
		if st, ok := seen[w]; !ok || st != "Succeeded" {
			missing = append(missing, fmt.Sprintf("%s(%s)", w, st))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("report lacks succeeded phases %v; phases: %+v", missing, r.Phases)
	}
	return nil
}

// Phases the scenarios expect to see succeed: every kubeadm phase and
// sub-phase of kubeadm's phase table (pkg/kubeadm) that applies to the
// scenarios' specs (local etcd; control planes with a certificate key).
var (
	initPhases             = tablePhases(machineadm.RoleControlPlane, machineadm.ActionInit)
	workerJoinPhases       = tablePhases(machineadm.RoleWorker, machineadm.ActionJoin)
	controlPlaneJoinPhases = tablePhases(machineadm.RoleControlPlane, machineadm.ActionJoin)
)

func tablePhases(role machineadm.Role, action machineadm.Action) []string {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: role, Action: action}}
	if role == machineadm.RoleControlPlane {
		cfg.Spec.ControlPlane = &machineadm.ControlPlane{Etcd: machineadm.Etcd{Local: &machineadm.LocalEtcd{}}, CertificateKey: &machineadm.SecretSource{File: "/k"}}
	}
	var names []string
	for _, p := range run.PhasesFor(cfg) {
		names = append(names, p.Name)
	}
	return names
}

// slowLeafMs is the shortest leaf phase duration summary names.
const slowLeafMs = 200

// slowLeaves names the report's leaf phases that took slowLeafMs or more,
// in run order with their durations (" slow: preflight 1.20s, ..."): where
// a bootstrap's time went.
func (r *outcomeReport) slowLeaves() string {
	var out []string
	parent := map[string]bool{}
	for _, p := range r.Phases {
		if i := strings.LastIndexByte(p.Name, '/'); i > 0 {
			parent[p.Name[:i]] = true
		}
	}
	for _, p := range r.Phases {
		if parent[p.Name] {
			continue // a parent spans its children
		}
		if p.DurationMs >= slowLeafMs {
			out = append(out, fmt.Sprintf("%s %.2fs", p.Name, float64(p.DurationMs)/1000))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " slow: " + strings.Join(out, ", ")
}
