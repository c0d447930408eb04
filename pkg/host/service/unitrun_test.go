package service

import (
	"strings"
	"testing"
)

// TestUnitRunChanged: the same active run is unchanged; a stopped unit, a
// restart by systemd and a new activation are changes, each said.
func TestUnitRunChanged(t *testing.T) {
	first := UnitRun{ActiveState: "active", Restarts: 2, ActiveSince: 1000}
	if why := first.Changed(first); why != "" {
		t.Errorf("the same run: %q", why)
	}
	for now, want := range map[UnitRun]string{
		{ActiveState: "activating", Restarts: 2, ActiveSince: 1000}: "activating",
		{ActiveState: "active", Restarts: 3, ActiveSince: 9000}:     "NRestarts",
		{ActiveState: "active", Restarts: 2, ActiveSince: 9000}:     "ActiveEnterTimestampMonotonic",
	} {
		if why := first.Changed(now); !strings.Contains(why, want) {
			t.Errorf("%+v: %q, want it to name %s", now, why, want)
		}
	}
}
