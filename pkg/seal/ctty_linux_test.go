package seal

import (
	"os"
	"testing"

	"github.com/machineadm/machineadm/internal/testpty"
)

func TestMain(m *testing.M) {
	testpty.Child(func(p string) { _, _ = LoadIdentityFile(p) })
	os.Exit(m.Run())
}

// TestLoadIdentityFileTakesNoControllingTerminal: a terminal given as the
// identity file (--identity /dev/ttyS0) is refused without becoming the
// controlling terminal of a run that leads its session without one, as a
// systemd service does: its hangup would send the run SIGHUP.
func TestLoadIdentityFileTakesNoControllingTerminal(t *testing.T) {
	testpty.NoControllingTerminal(t)
}
