package report

import (
	"errors"
	"fmt"
)

// Class is an error class of the outcome report: one word from a fixed,
// documented list (docs/report.md) that tells an SRE where to look first.
type Class string

// The error classes. A new class is added here and in docs/report.md.
const (
	// ClassInvalidSpec: the spec or command line is invalid; nothing changed.
	ClassInvalidSpec Class = "InvalidSpec"
	// ClassPreflightFailed: a kubeadm preflight check failed.
	ClassPreflightFailed Class = "PreflightFailed"
	// ClassPayloadUnavailable: a referenced file, secret or URL could not be read.
	ClassPayloadUnavailable Class = "PayloadUnavailable"
	// ClassVerificationFailed: a digest or signature did not match.
	ClassVerificationFailed Class = "VerificationFailed"
	// ClassHostPreparationFailed: writing files, sysctl or kernel modules failed.
	ClassHostPreparationFailed Class = "HostPreparationFailed"
	// ClassContainerRuntimeUnavailable: containerd is not running or not answering on the CRI socket.
	ClassContainerRuntimeUnavailable Class = "ContainerRuntimeUnavailable"
	// ClassKubeletFailed: the kubelet did not start or did not become healthy.
	ClassKubeletFailed Class = "KubeletFailed"
	// ClassControlPlaneUnhealthy: the API server or another control-plane component did not become healthy.
	ClassControlPlaneUnhealthy Class = "ControlPlaneUnhealthy"
	// ClassEtcdUnhealthy: the local etcd member did not start or join.
	ClassEtcdUnhealthy Class = "EtcdUnhealthy"
	// ClassDiscoveryFailed: cluster discovery failed (wrong CA cert hash, bad token, cluster-info unreadable).
	ClassDiscoveryFailed Class = "DiscoveryFailed"
	// ClassTLSBootstrapFailed: the kubelet's TLS bootstrap (CSR) failed.
	ClassTLSBootstrapFailed Class = "TLSBootstrapFailed"
	// ClassTimeout: a bounded wait ran out (endpoint unreachable, component too slow).
	ClassTimeout Class = "Timeout"
	// ClassInterrupted: the run was stopped by a signal (SIGTERM, SIGINT).
	ClassInterrupted Class = "Interrupted"
	// ClassInternal: a bug or an unclassified failure.
	ClassInternal Class = "Internal"
)

// Error is an error that carries its report class and a hint for a person.
// Code that knows why something failed wraps the cause with NewError;
// the report takes the outermost class found with errors.As.
type Error struct {
	// Class is the report class.
	Class Class
	// Hint says what to check, in one sentence for a person.
	Hint string
	// Err is the cause.
	Err error
}

// NewError wraps err with a class and a hint.
func NewError(class Class, hint string, err error) *Error {
	return &Error{Class: class, Hint: hint, Err: err}
}

// Errorf is NewError with a formatted cause (%w is supported).
func Errorf(class Class, hint, format string, args ...any) *Error {
	return &Error{Class: class, Hint: hint, Err: fmt.Errorf(format, args...)}
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the class and hint carried by err, or ClassInternal and
// an empty hint when err carries none.
func ClassOf(err error) (Class, string) {
	var re *Error
	if errors.As(err, &re) {
		return re.Class, re.Hint
	}
	return ClassInternal, ""
}
