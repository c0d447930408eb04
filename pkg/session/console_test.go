package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/sysctl"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/report"
)

// captureWriter keeps the final report.
type captureWriter struct{ got *report.BootstrapReport }

func (w *captureWriter) Name() string { return "capture" }
func (w *captureWriter) Write(_ context.Context, r *report.BootstrapReport) error {
	w.got = r
	return nil
}

// TestConsoleRecordsEffectiveValuesAndRegisteredNode: what the phases
// return reaches the outcome report through the run's console — the
// sysctl phase's desired and effective values and its warnings, and, for
// a join that failed after its Node registered, the Node's name and the
// hint to delete it.
func TestConsoleRecordsEffectiveValuesAndRegisteredNode(t *testing.T) {
	w := &phases.Workflow{Command: "bootstrap", Phases: []phases.Phase{
		{Name: "sysctl", Run: func(context.Context, *phases.Data) (phases.Result, error) {
			return phases.Result{Changed: true, Changes: []string{"set vm.a = 1 (was 0)"},
				Sysctl:   []sysctl.Value{{Key: "vm.a", Desired: "1", Effective: "1", Boot: &sysctl.Setting{File: "/etc/sysctl.d/99-x.conf", Value: "0"}}, {Key: "vm.flush", Desired: "1", Err: errors.New("permission denied")}},
				Warnings: []string{"sysctl vm.a: /etc/sysctl.d/99-x.conf sets 0 at the next boot"}}, nil
		}},
		{Name: "kubelet-wait-bootstrap", RegistersNode: true, Run: func(context.Context, *phases.Data) (phases.Result, error) {
			return phases.Result{Changed: true}, nil
		}},
		{Name: "static-pods", Run: func(context.Context, *phases.Data) (phases.Result, error) {
			return phases.Result{}, errors.New("bad manifest")
		}},
	}}
	cw := &captureWriter{}
	rec := report.NewRecorder(report.Meta{Command: "bootstrap", Machine: report.Machine{Hostname: "w1", NodeName: "w1", MachineadmVersion: "v0"}}, []report.Writer{cw}, nil, nil)
	var out bytes.Buffer
	c := newConsole(rec, &out, w, false)
	d := &phases.Data{SpecDigest: "sha256:aa", WorkDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Out: io.Discard}
	if failed, _ := w.Run(context.Background(), d, c, phases.RunOptions{}); failed != "static-pods" {
		t.Fatalf("failed in %q", failed)
	}
	if err := rec.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := cw.got
	if r == nil || len(r.Phases) == 0 {
		t.Fatal("no report")
	}
	p := r.Phases[0]
	want := []report.SysctlValue{{Key: "vm.a", Desired: "1", Effective: "1", BootValue: "0", BootFile: "/etc/sysctl.d/99-x.conf"}, {Key: "vm.flush", Desired: "1", ReadError: "permission denied"}}
	if p.Name != "sysctl" || len(p.Sysctl) != 2 || p.Sysctl[0] != want[0] || p.Sysctl[1] != want[1] || len(p.Warnings) != 1 {
		t.Errorf("sysctl phase %+v, want values %+v and one warning", p, want)
	}
	if r.NodeRegistered != "w1" || !strings.Contains(r.Hint, "kubectl delete node w1") {
		t.Errorf("nodeRegistered %q, hint %q", r.NodeRegistered, r.Hint)
	}
}
