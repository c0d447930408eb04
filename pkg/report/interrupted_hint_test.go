package report

import (
	"context"
	"strings"
	"syscall"
	"testing"
)

// The hint of a run stopped by SIGTERM names the command that was
// stopped: a prepare is told to run prepare again, not bootstrap.
func TestInterruptedHintNamesTheCommand(t *testing.T) {
	for _, cmd := range []string{"prepare", "bootstrap"} {
		w := &memWriter{name: "mem"}
		meta := testMeta()
		meta.Command = cmd
		rec := NewRecorder(meta, []Writer{w}, nil, nil)
		rec.Plan("files")
		rec.PhaseStarted("files")
		if err := rec.Interrupted(context.Background(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r := w.only(t)
		if !strings.Contains(r.Hint, "`machineadm "+cmd+"`") {
			t.Errorf("%s: hint %q does not name `machineadm %s`", cmd, r.Hint, cmd)
		}
		other := map[string]string{"prepare": "bootstrap", "bootstrap": "prepare"}[cmd]
		if strings.Contains(r.Hint, "machineadm "+other) {
			t.Errorf("%s: hint %q names machineadm %s", cmd, r.Hint, other)
		}
	}
}
