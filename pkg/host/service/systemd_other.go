//go:build !linux

package service

import (
	"context"
	"errors"
)

// ErrNoSystemd is returned on systems without systemd.
var ErrNoSystemd = errors.New("systemd is only available on Linux")

// Systemd is the systemd manager; on this OS every call fails with
// ErrNoSystemd.
type Systemd struct{}

// NewSystemd returns a manager whose calls fail with ErrNoSystemd.
func NewSystemd() *Systemd { return &Systemd{} }

// DaemonReload fails with ErrNoSystemd.
func (s *Systemd) DaemonReload(ctx context.Context) error { return ErrNoSystemd }

// Restart fails with ErrNoSystemd.
func (s *Systemd) Restart(ctx context.Context, unit string) error { return ErrNoSystemd }

// Close does nothing.
func (s *Systemd) Close() {}

// UnitRun fails with ErrNoSystemd.
func (s *Systemd) UnitRun(ctx context.Context, unit string) (UnitRun, error) {
	return UnitRun{}, ErrNoSystemd
}
