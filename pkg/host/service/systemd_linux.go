package service

import (
	"context"
	"fmt"
	"sync"

	"github.com/coreos/go-systemd/v22/dbus"
)

// Systemd is a Manager that talks to systemd (PID 1) over the system
// D-Bus. It connects on first use, so constructing one on a machine
// without systemd is harmless until a restart is needed.
type Systemd struct {
	mu   sync.Mutex
	conn *dbus.Conn
}

// NewSystemd returns a Manager for the running systemd.
func NewSystemd() *Systemd { return &Systemd{} }

func (s *Systemd) connect(ctx context.Context) (*dbus.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		return s.conn, nil
	}
	c, err := dbus.NewWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to systemd over D-Bus: %w", err)
	}
	s.conn = c
	return c, nil
}

// DaemonReload asks systemd to reload its units (org.freedesktop.systemd1
// Manager.Reload).
func (s *Systemd) DaemonReload(ctx context.Context) error {
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	if err := c.ReloadContext(ctx); err != nil {
		return fmt.Errorf("systemd daemon-reload: %w", err)
	}
	return nil
}

// Restart queues a restart job for unit in "replace" mode and waits for
// its result.
func (s *Systemd) Restart(ctx context.Context, unit string) error {
	return s.job(ctx, unit, "restarting", (*dbus.Conn).RestartUnitContext)
}

// job queues one job for unit in "replace" mode through queue and waits,
// bounded by ctx, for its result; any result but "done" is a *JobError.
// verb names the job in errors ("restarting", "starting").
func (s *Systemd) job(ctx context.Context, unit, verb string, queue func(c *dbus.Conn, ctx context.Context, name, mode string, ch chan<- string) (int, error)) error {
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	done := make(chan string, 1)
	if _, err := queue(c, ctx, unit, "replace", done); err != nil {
		return fmt.Errorf("%s %s: %w", verb, unit, err)
	}
	select {
	case res := <-done:
		if res != "done" {
			return &JobError{Unit: unit, Result: res}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w", verb, unit, ctx.Err())
	}
}

// Close closes the D-Bus connection, if one was opened.
func (s *Systemd) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// UnitRun reads unit's ActiveState, ActiveEnterTimestampMonotonic and
// (a service's) NRestarts over D-Bus (org.freedesktop.systemd1.Unit and
// .Service properties).
func (s *Systemd) UnitRun(ctx context.Context, unit string) (UnitRun, error) {
	c, err := s.connect(ctx)
	if err != nil {
		return UnitRun{}, err
	}
	var r UnitRun
	get := func(typ, name string, into any) error {
		var p *dbus.Property
		var err error
		if typ == "" {
			p, err = c.GetUnitPropertyContext(ctx, unit, name)
		} else {
			p, err = c.GetUnitTypePropertyContext(ctx, unit, typ, name)
		}
		if err != nil {
			return fmt.Errorf("reading %s of %s: %w", name, unit, err)
		}
		if err := p.Value.Store(into); err != nil {
			return fmt.Errorf("reading %s of %s: %w", name, unit, err)
		}
		return nil
	}
	if err := get("", "ActiveState", &r.ActiveState); err != nil {
		return UnitRun{}, err
	}
	if err := get("", "ActiveEnterTimestampMonotonic", &r.ActiveSince); err != nil {
		return UnitRun{}, err
	}
	if err := get("Service", "NRestarts", &r.Restarts); err != nil {
		return UnitRun{}, err
	}
	return r, nil
}
