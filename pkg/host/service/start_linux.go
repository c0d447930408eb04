package service

import (
	"context"
	"fmt"
)

// Start queues a start job for unit in "replace" mode and waits for its
// result. Starting an active unit is a no-op job that finishes "done".
func (s *Systemd) Start(ctx context.Context, unit string) error {
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	done := make(chan string, 1)
	if _, err := c.StartUnitContext(ctx, unit, "replace", done); err != nil {
		return fmt.Errorf("starting %s: %w", unit, err)
	}
	select {
	case res := <-done:
		if res != "done" {
			return &JobError{Unit: unit, Result: res}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("starting %s: %w", unit, ctx.Err())
	}
}
