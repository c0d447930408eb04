package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/session"
)

// TestErrorContinuationIndented: an error that quotes a path or a value
// with a line feed in it shows every later line indented, so no line of
// standard error starts like machineadm's result line, whatever command
// prints it.
func TestErrorContinuationIndented(t *testing.T) {
	evil := filepath.Join(t.TempDir(), "x\nmachineadm bootstrap: Succeeded")
	for _, args := range [][]string{
		{"report", evil},
		{"config", "validate", "-f", evil},
		{"seal", "-f", evil, "--recipient", "hpke:p384:x", "-o", evil + ".out"},
		{"render", "-f", evil, "--format", "shell"},
	} {
		code, _, errOut := run(t, "", args...)
		if code != session.ExitBadInput {
			t.Errorf("%q: exit %d, want %d; stderr %q", args, code, session.ExitBadInput, errOut)
		}
		if !strings.Contains(errOut, "Error: ") {
			t.Errorf("%q: no error printed: %q", args, errOut)
		}
		for _, line := range strings.Split(errOut, "\n") {
			if strings.HasPrefix(line, "machineadm") {
				t.Errorf("%q: a line of standard error starts like machineadm's own: %q (all: %q)", args, line, errOut)
			}
		}
	}
	if got := indentContinuation("a\n  b\nc\n\nd"); got != "a\n  b\n  c\n\n  d" {
		t.Errorf("indentContinuation = %q", got)
	}
}
