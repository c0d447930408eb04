package session

import (
	"bytes"
	"errors"
	"strings"
	"testing"

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
	spec := footer(errors.New("spec.join.token: missing"))
	if !strings.Contains(spec, "dry run: FAILED in phase kubeadm-config; a real run would fail there too") {
		t.Errorf("footer after a spec failure: %q", spec)
	}
}
