// Package service restarts and reloads systemd units for host preparation:
// the Manager interface, its systemd implementation over D-Bus
// (github.com/coreos/go-systemd/v22/dbus) and a recording double for
// tests.
package service

import (
	"context"
	"fmt"
	"sync"
)

// Manager is the small part of a service manager that host preparation
// needs.
type Manager interface {
	// DaemonReload makes the manager re-read unit files and drop-ins
	// (systemctl daemon-reload).
	DaemonReload(ctx context.Context) error
	// Restart restarts unit (for example "containerd.service"), starting it
	// when it is stopped, and waits until the restart job has finished.
	// For a Type=notify unit such as containerd.service the job finishes
	// only once the daemon reports ready, so a nil error means the service
	// is up. A failed, timed-out or cancelled job is an error.
	Restart(ctx context.Context, unit string) error
}

// Recorder is a Manager double for tests: it records calls and returns
// the configured errors. It does not start anything.
type Recorder struct {
	mu sync.Mutex
	// Calls lists the calls in order: "daemon-reload" or "restart UNIT".
	Calls []string
	// RestartErr, when set, is returned by Restart.
	RestartErr error
	// ReloadErr, when set, is returned by DaemonReload.
	ReloadErr error
	// OnRestart, when set, runs on each Restart before RestartErr is
	// returned; tests use it to observe the host at restart time.
	OnRestart func(unit string) error
}

// DaemonReload records "daemon-reload".
func (r *Recorder) DaemonReload(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Calls = append(r.Calls, "daemon-reload")
	return r.ReloadErr
}

// Restart records "restart UNIT".
func (r *Recorder) Restart(ctx context.Context, unit string) error {
	r.mu.Lock()
	r.Calls = append(r.Calls, "restart "+unit)
	hook := r.OnRestart
	r.mu.Unlock()
	if hook != nil {
		if err := hook(unit); err != nil {
			return err
		}
	}
	return r.RestartErr
}

// Snapshot returns a copy of Calls.
func (r *Recorder) Snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.Calls...)
}

// JobError is a systemd job that did not finish with result "done".
type JobError struct {
	// Unit is the unit of the job.
	Unit string
	// Result is systemd's job result: "failed", "timeout", "canceled",
	// "dependency" or "skipped".
	Result string
}

func (e *JobError) Error() string {
	return fmt.Sprintf("restarting %s: systemd job result %q (see journalctl -u %s)", e.Unit, e.Result, e.Unit)
}
