package service

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestRecorder(t *testing.T) {
	r := &Recorder{RestartErr: errors.New("boom")}
	r.DaemonReload(context.Background())
	if err := r.Restart(context.Background(), "containerd.service"); err == nil {
		t.Error("RestartErr not returned")
	}
	if got := r.Snapshot(); !slices.Equal(got, []string{"daemon-reload", "restart containerd.service"}) {
		t.Errorf("calls %q", got)
	}
}

func TestSystemdWithoutBusFails(t *testing.T) {
	// On machines without systemd as PID 1 (these test machines) the
	// connection fails with an error; where systemd runs, restarting a
	// unit that does not exist fails with one.
	s := NewSystemd()
	defer s.Close()
	if err := s.Restart(context.Background(), "machineadm-no-such-unit.service"); err == nil {
		t.Error("restart of a missing unit succeeded")
	}
	if msg := (&JobError{Unit: "containerd.service", Result: "failed"}).Error(); msg != `restarting containerd.service: systemd job result "failed" (see journalctl -u containerd.service)` {
		t.Errorf("JobError = %q", msg)
	}
}
