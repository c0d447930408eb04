package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/spec"
)

// Exit codes of the machineadm command (the OS-maintainer contract,
// docs/os-contract.md).
const (
	// ExitOK means success.
	ExitOK = 0
	// ExitFailed means the command ran and failed; the report says why.
	ExitFailed = 1
	// ExitBadInput means bad usage or an invalid spec; nothing was changed.
	ExitBadInput = 2
	// ExitBusy means another machineadm run holds the run lock of the same
	// work directory (*BusyError); nothing was done and nothing written.
	ExitBusy = 3
)

// UsageError marks bad command-line usage; it maps to exit code 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitCode maps an error returned by a command to the process exit code:
// nil is 0, a *BusyError 3, a *UsageError, an invalid spec
// (spec.IsInvalidSpec), a sealed spec this machine cannot open
// (*SealedError, unless its key service did not answer: class
// PayloadUnavailable, 1) or a run that failed with class InvalidSpec
// (found by a check before any change) is 2, anything else 1.
func ExitCode(err error) int {
	var ue *UsageError
	var rf *RunFailedError
	var be *BusyError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &be):
		return ExitBusy
	case errors.As(err, &ue), spec.IsInvalidSpec(err):
		return ExitBadInput
	case errors.As(err, new(*SealedError)):
		// A key service that did not answer is no bad input: run again.
		if c, _ := errclass.Of(err); c == errclass.PayloadUnavailable {
			return ExitFailed
		}
		return ExitBadInput
	case errors.As(err, &rf) && rf.Class == errclass.InvalidSpec:
		// A check found bad input (a containerd configPatch containerd
		// refuses) before anything was changed.
		return ExitBadInput
	}
	return ExitFailed
}

// Classify gives an error that failed outside any phase its class, once:
// an error that already carries one (errclass.Error) keeps it; an invalid
// spec or a usage error is InvalidSpec; a cancelled context is
// Interrupted and a deadline Timeout; anything else Internal. Phase
// failures are classified where they happen (the phase's declared class,
// kubeadm's message rules in pkg/kubeadm) and never reach this.
func Classify(err error) error {
	var re *errclass.Error
	var ue *UsageError
	switch {
	case err == nil || errors.As(err, &re):
		return err
	case spec.IsInvalidSpec(err):
		return errclass.New(errclass.InvalidSpec, errclass.DefaultHint(errclass.InvalidSpec), err)
	case errors.As(err, &ue):
		return errclass.New(errclass.InvalidSpec, "fix the command line; see --help", err)
	case errors.Is(err, context.Canceled):
		return errclass.New(errclass.Interrupted, errclass.DefaultHint(errclass.Interrupted), err)
	case errors.Is(err, context.DeadlineExceeded):
		return errclass.New(errclass.Timeout, errclass.DefaultHint(errclass.Timeout), err)
	}
	return errclass.New(errclass.Internal, errclass.DefaultHint(errclass.Internal), err)
}

// SealedError refuses a run whose spec is sealed when the envelope does
// not open with this machine's identity (or is not for this machine):
// exit code 2, before any phase, with nothing on the host changed. Its
// class is its cause's (VerificationFailed; InvalidSpec for an envelope
// that does not fit the spec; PayloadUnavailable when the key service
// did not answer, which is exit code 1: the run may be repeated). Its message names the identity file and
// never a secret.
type SealedError struct {
	// Identity is the identity file that was tried (its host path).
	Identity string
	// Err is the cause, with its class and hint (errclass.Error).
	Err error
}

func (e *SealedError) Error() string {
	if c, _ := errclass.Of(e.Err); c == errclass.PayloadUnavailable {
		return fmt.Sprintf("the spec is sealed and the key service its SealedSecrets document is sealed to did not answer (identity %s); nothing was changed, run the same command again: %v", e.Identity, e.Err)
	}
	return fmt.Sprintf("the spec is sealed and its SealedSecrets document did not open with the identity %s; nothing was changed (give this machine's identity with --identity FILE): %v", e.Identity, e.Err)
}

func (e *SealedError) Unwrap() error { return e.Err }

// RunFailedError is a bootstrap or prepare that ran and failed (exit code
// 1). Its message is redacted.
type RunFailedError struct {
	// Command is "bootstrap" or "prepare".
	Command string
	// Phase is the full name of the failed phase ("" before any phase).
	Phase string
	// Class and Hint are the report's error class and hint.
	Class errclass.Class
	Hint  string
	// Err is the cause, as text (secrets redacted): its Go type is not
	// kept.
	Err error
	// DryRunOnly says that a dry run failed in its own machinery, which a
	// real run does not use (phases.DryRunOnlyError): the dry run says
	// nothing about a real run.
	DryRunOnly bool
}

func (e *RunFailedError) Error() string {
	msg := fmt.Sprintf("%s: phase %s failed (%s): %v", e.Command, e.Phase, e.Class, e.Err)
	if e.Hint != "" {
		msg += "\nhint: " + e.Hint
	}
	return msg
}

func (e *RunFailedError) Unwrap() error { return e.Err }
