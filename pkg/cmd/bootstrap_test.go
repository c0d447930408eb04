package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/session"
)

// `bootstrap phase ""` (an empty NAME, as a script with an unset variable
// passes it) is a usage error: it must not run the whole bootstrap.
func TestBootstrapPhaseEmptyNameIsUsageError(t *testing.T) {
	spec := exampleSpec(t, "control-plane-init")
	for _, name := range []string{"", " "} {
		dr := filepath.Join(t.TempDir(), "plan")
		code, out, errOut := run(t, "", "bootstrap", "phase", name, "-f", spec, "--dry-run", "--dry-run-dir", dr)
		if code != session.ExitBadInput || !strings.Contains(errOut, "phase name is empty") {
			t.Errorf("bootstrap phase %q: exit %d, want %d and a message\nstdout %s\nstderr %s", name, code, session.ExitBadInput, out, errOut)
		}
		if strings.Contains(out, "[bootstrap] ") {
			t.Errorf("bootstrap phase %q ran phases:\n%s", name, out)
		}
	}
}
