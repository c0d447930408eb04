//go:build !windows

package cmd

import (
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/session"
)

// TestKubeletServiceOnlyOnWindows: the hidden service program refuses to
// run elsewhere, as a usage error, and is not in the help.
func TestKubeletServiceOnlyOnWindows(t *testing.T) {
	code, _, errOut := prepareCLI(t, "kubelet-service")
	if code != session.ExitBadInput || !strings.Contains(errOut, "only on Windows") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if _, out, _ := prepareCLI(t, "--help"); strings.Contains(out, "kubelet-service") {
		t.Error("the hidden command is listed in --help")
	}
}
