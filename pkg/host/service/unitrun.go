package service

import "fmt"

// UnitRun is what systemd says about the current run of a service unit:
// enough to tell whether it stopped or was started again between two
// looks (Changed).
type UnitRun struct {
	// ActiveState is the unit's ActiveState: "active", "activating"
	// (also while it waits for an automatic restart), "failed", ...
	ActiveState string
	// Restarts is the service's NRestarts: how many times systemd
	// restarted it by its Restart= setting.
	Restarts uint32
	// ActiveSince is the unit's ActiveEnterTimestampMonotonic: when it
	// last entered the active state, in microseconds of CLOCK_MONOTONIC;
	// 0 when it never did.
	ActiveSince uint64
}

// Changed says how now differs from r, an earlier look at the same unit:
// "" when the same run is still active; otherwise why not (it is no
// longer active, systemd restarted it, or it entered the active state
// again).
func (r UnitRun) Changed(now UnitRun) string {
	switch {
	case now.ActiveState != "active":
		return fmt.Sprintf("its state is %q (the process exited)", now.ActiveState)
	case now.Restarts != r.Restarts:
		return fmt.Sprintf("systemd restarted it %d times (NRestarts)", now.Restarts-r.Restarts)
	case now.ActiveSince != r.ActiveSince:
		return "it became active again (ActiveEnterTimestampMonotonic changed)"
	}
	return ""
}
