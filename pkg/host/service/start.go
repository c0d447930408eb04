package service

import "context"

// Start records "start UNIT" and returns RestartErr, like Restart.
func (r *Recorder) Start(ctx context.Context, unit string) error {
	r.mu.Lock()
	r.Calls = append(r.Calls, "start "+unit)
	hook := r.OnRestart
	r.mu.Unlock()
	if hook != nil {
		if err := hook(unit); err != nil {
			return err
		}
	}
	return r.RestartErr
}
