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

// classes lists every class in the order docs/report.md describes them.
var classes = []Class{
	ClassInvalidSpec, ClassPreflightFailed, ClassPayloadUnavailable, ClassVerificationFailed,
	ClassHostPreparationFailed, ClassContainerRuntimeUnavailable, ClassKubeletFailed,
	ClassControlPlaneUnhealthy, ClassEtcdUnhealthy, ClassDiscoveryFailed, ClassTLSBootstrapFailed,
	ClassTimeout, ClassInterrupted, ClassInternal,
}

// Classes returns every error class, in documentation order.
func Classes() []Class { return append([]Class(nil), classes...) }

// Known reports whether c is one of the fixed classes.
func (c Class) Known() bool {
	for _, k := range classes {
		if c == k {
			return true
		}
	}
	return false
}

// defaultHints say what to check first for each class, used when neither
// the error nor Classify gives a more precise hint.
var defaultHints = map[Class]string{
	ClassInvalidSpec:                 "Fix the machine spec: run `machineadm config validate -f SPEC`, which lists every invalid field with its path.",
	ClassPreflightFailed:             "Read the [ERROR ...] lines of the log tail; fix the host or list the check in spec.node.ignorePreflightErrors if it is safe.",
	ClassPayloadUnavailable:          "Check that every file, secret and URL the spec references exists and is readable from this machine.",
	ClassVerificationFailed:          "The downloaded content differs from its pinned digest or signature: check the source and the sha256 in the spec.",
	ClassHostPreparationFailed:       "Check the failed host step's message: file paths, permissions, sysctl names and kernel modules available on this OS.",
	ClassContainerRuntimeUnavailable: "Check that containerd runs and answers on spec.node.criSocket: `systemctl status containerd`, `crictl info`.",
	ClassKubeletFailed:               "Check the kubelet: `systemctl status kubelet`, `journalctl -u kubelet`; cgroup driver and swap are common causes.",
	ClassControlPlaneUnhealthy:       "Check the control-plane static pods: `crictl ps -a`, `crictl logs <container>`, and the API server's certificates and flags.",
	ClassEtcdUnhealthy:               "Check the etcd member: `crictl logs` of the etcd container, the data directory, peer ports 2379/2380 and the etcd certificates.",
	ClassDiscoveryFailed:             "Check spec.join: the CA cert hash must match the cluster CA (`machineadm pki init` prints it) and the token must exist and not be expired.",
	ClassTLSBootstrapFailed:          "Check that the token may create CSRs and that the controller manager approves and signs them (`kubectl get csr`).",
	ClassTimeout:                     "Check that the endpoint is reachable from this machine (address, port, firewall, load balancer) and the timeout is long enough.",
	ClassInterrupted:                 "The run was stopped by a signal; run `machineadm bootstrap` again: it continues from where the host is.",
	ClassInternal:                    "This is a machineadm bug or an unclassified failure: read the error and the log tail, and report it with this report attached.",
}

// DefaultHint returns the generic hint for class c ("" for an unknown class).
func DefaultHint(c Class) string { return defaultHints[c] }
