package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/redact"
)

// TestDryRunFooterTellsTheTruth: a dry run that failed on the spec or the
// host says a real run would fail there too; one that failed in its own
// machinery (the join dry run's stand-in cluster-info, unreachable with
// the loopback interface down) does not claim that, since a real run never
// uses it.
func TestDryRunFooterTellsTheTruth(t *testing.T) {
	footer := func(cause error) string {
		var buf bytes.Buffer
		r := &record{out: redact.New().NewWriter(&buf)}
		err := &RunFailedError{Command: "bootstrap", Phase: "kubeadm-config", Class: errclass.HostPreparationFailed,
			Err: errclass.New(errclass.HostPreparationFailed, "hint", cause)}
		r.footer(Options{DryRun: true, Command: Bootstrap}, nil, t.TempDir(), err)
		return buf.String()
	}
	standIn := footer(&phases.DryRunOnlyError{Err: errors.New("dial tcp 127.0.0.1:1: connect: network is unreachable")})
	if strings.Contains(standIn, "a real run would fail") || !strings.Contains(standIn, "tells nothing about a real run") {
		t.Errorf("footer after the stand-in failed: %q", standIn)
	}
	// Through the run as it records a failed phase: the cause is kept
	// as text only, the dry-run-only mark must survive that.
	root := t.TempDir()
	cfg := &machineadm.MachineBootstrapConfig{}
	cfg.Spec.Node.Name = "w1"
	no := false
	cfg.Spec.Report.Console = &no
	cfg.Spec.Report.Sentinel = "-"
	var buf bytes.Buffer
	r := startRecord(Options{Command: Bootstrap, DryRun: true, Out: &buf}, cfg, root)
	w := &phases.Workflow{Phases: []phases.Phase{{Name: "kubeadm-config", Run: func(context.Context, *phases.Data) (phases.Result, error) {
		return phases.Result{}, errclass.New(errclass.HostPreparationFailed, "hint", &phases.DryRunOnlyError{Err: errors.New("network is unreachable")})
	}}}}
	err := r.workflow(t.Context(), w, &phases.Data{Config: cfg, DryRun: true, WorkDir: root, Log: slog.New(slog.DiscardHandler), Out: io.Discard}, phases.RunOptions{})
	r.footer(Options{DryRun: true, Command: Bootstrap}, nil, root, err)
	if got := buf.String(); strings.Contains(got, "a real run would fail") || !strings.Contains(got, "tells nothing about a real run") {
		t.Errorf("footer after a recorded stand-in failure (%v):\n%s", err, got)
	}
	spec := footer(errors.New("spec.join.token: missing"))
	if !strings.Contains(spec, "dry run: FAILED in phase kubeadm-config; a real run would fail there too") {
		t.Errorf("footer after a spec failure: %q", spec)
	}
}
