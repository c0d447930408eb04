//go:build !linux

package service

import "context"

// Start fails with ErrNoSystemd.
func (s *Systemd) Start(ctx context.Context, unit string) error { return ErrNoSystemd }
