package domainjoin

import (
	"context"
	"errors"
)

// Secret holds the join's secret input, read by the step from the spec's
// SecretSource (inline value or file). It never reaches a log, a report
// or a command line.
type Secret struct {
	// Password of the credentials (MethodCredentials).
	Password string
	// Blob is the offline-join blob as given: the base64 text (UTF-8 or
	// UTF-16 as djoin writes it) (MethodOfflineBlob).
	Blob []byte
}

// Outcome is what a successful Join did.
type Outcome struct {
	// RebootRequired says the join takes effect after a reboot (Windows).
	RebootRequired bool
	// Detail is a line for the report, for example adcli testjoin's
	// result.
	Detail string
}

// Joiner is the operating system's side of a domain join. Adcli is the
// Linux implementation; the Windows one is built on netapi32 (NetAPI in
// windows.go); tests use a fake.
type Joiner interface {
	// Membership reports what the host is joined to now, changing
	// nothing.
	Membership(ctx context.Context, p *Plan) (Membership, error)
	// Join joins the domain of p. Errors carry a report class
	// (DomainJoinFailed with a hint).
	Join(ctx context.Context, p *Plan, s Secret) (Outcome, error)
}

// ErrRebootRequired is wrapped by the step's error when the join is done
// but takes effect only after a reboot; its report class is
// RebootRequired. The first-boot script reboots and runs bootstrap again,
// which finds the machine joined and continues.
var ErrRebootRequired = errors.New("the domain join takes effect after a reboot")
