package readlimit

import (
	"os"
	"testing"

	"github.com/machineadm/machineadm/internal/testpty"
)

func TestMain(m *testing.M) {
	testpty.Child(func(p string) { _, _ = File(p, 16) })
	os.Exit(m.Run())
}

// TestFileTakesNoControllingTerminal: a terminal at a path File reads (a
// spec's report path or sentinel naming /dev/ttyS0) does not become the
// controlling terminal of a run that leads its session without one, as a
// systemd service does: its hangup would send the run SIGHUP.
func TestFileTakesNoControllingTerminal(t *testing.T) {
	testpty.NoControllingTerminal(t)
}
