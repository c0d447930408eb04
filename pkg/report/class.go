package report

import "github.com/machineadm/machineadm/pkg/errclass"

// Class is an error class of the outcome report; see errclass.Class.
type Class = errclass.Class

// The error classes, re-exported from errclass for the report's readers.
const (
	ClassInvalidSpec                 = errclass.InvalidSpec
	ClassPreflightFailed             = errclass.PreflightFailed
	ClassPayloadUnavailable          = errclass.PayloadUnavailable
	ClassVerificationFailed          = errclass.VerificationFailed
	ClassHostPreparationFailed       = errclass.HostPreparationFailed
	ClassContainerRuntimeUnavailable = errclass.ContainerRuntimeUnavailable
	ClassKubeletFailed               = errclass.KubeletFailed
	ClassControlPlaneUnhealthy       = errclass.ControlPlaneUnhealthy
	ClassEtcdUnhealthy               = errclass.EtcdUnhealthy
	ClassDiscoveryFailed             = errclass.DiscoveryFailed
	ClassTLSBootstrapFailed          = errclass.TLSBootstrapFailed
	ClassTimeout                     = errclass.Timeout
	ClassInterrupted                 = errclass.Interrupted
	ClassInternal                    = errclass.Internal
)

// Error is errclass.Error: an error with its class and hint.
type Error = errclass.Error

// NewError wraps err with a class and a hint (errclass.New).
func NewError(class Class, hint string, err error) *Error { return errclass.New(class, hint, err) }

// Errorf is NewError with a formatted cause (errclass.Errorf).
func Errorf(class Class, hint, format string, args ...any) *Error {
	return errclass.Errorf(class, hint, format, args...)
}

// ClassOf returns the class and hint carried by err (errclass.Of).
func ClassOf(err error) (Class, string) { return errclass.Of(err) }

// Classes returns every error class, in documentation order.
func Classes() []Class { return errclass.All() }

// DefaultHint returns the generic hint for class c ("" for an unknown class).
func DefaultHint(c Class) string { return errclass.DefaultHint(c) }
