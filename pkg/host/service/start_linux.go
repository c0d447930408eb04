package service

import (
	"context"

	"github.com/coreos/go-systemd/v22/dbus"
)

// Start queues a start job for unit in "replace" mode and waits for its
// result. Starting an active unit is a no-op job that finishes "done".
func (s *Systemd) Start(ctx context.Context, unit string) error {
	return s.job(ctx, unit, "starting", (*dbus.Conn).StartUnitContext)
}
