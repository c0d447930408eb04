package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/seal"
)

// A sealed spec that does not open is bad input (exit code 2) unless the
// key service did not answer: then the run is repeated (exit code 1,
// PayloadUnavailable), since the envelope may be fine.
func TestSealedErrorExitCode(t *testing.T) {
	down := (&seal.OpenError{Path: "recipients[0]", Err: fmt.Errorf("%w: dial tcp: i/o timeout", seal.ErrUnavailable)}).Classified()
	tampered := (&seal.OpenError{Path: "recipients[0]", Err: seal.ErrAuthentication}).Classified()
	for _, tc := range []struct {
		name  string
		cause error
		exit  int
		class errclass.Class
		says  string
	}{
		{"key service down", down, ExitFailed, errclass.PayloadUnavailable, "run the same command again"},
		{"does not open", tampered, ExitBadInput, errclass.VerificationFailed, "did not open with the identity"},
	} {
		err := &SealedError{Identity: "/etc/machineadm/identity", Err: tc.cause}
		if got := ExitCode(err); got != tc.exit {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.exit)
		}
		if c, _ := errclass.Of(Classify(err)); c != tc.class {
			t.Errorf("%s: class %s, want %s", tc.name, c, tc.class)
		}
		if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: message %q does not say %q", tc.name, err.Error(), tc.says)
		}
	}
}
