// Package errclass holds machineadm's error classes: the fixed, documented
// list of words (docs/report.md) that an outcome report uses to tell an SRE
// where to look first, and the error type that carries a class and a hint
// from the place a failure is born. It is a leaf package: host steps,
// phases and the report all import it, and it imports only the standard
// library.
package errclass

import (
	"errors"
	"fmt"
)

// Class is an error class of the outcome report.
type Class string

// The error classes. A new class is added here, to classes and defaultHints
// below, and to docs/report.md.
const (
	// InvalidSpec: the spec or command line is invalid; nothing changed.
	InvalidSpec Class = "InvalidSpec"
	// PreflightFailed: a kubeadm preflight check failed.
	PreflightFailed Class = "PreflightFailed"
	// PayloadUnavailable: a referenced file, secret or URL could not be read.
	PayloadUnavailable Class = "PayloadUnavailable"
	// VerificationFailed: a digest, signature or sealed envelope did not verify.
	VerificationFailed Class = "VerificationFailed"
	// HostPreparationFailed: writing files, sysctl or kernel modules failed.
	HostPreparationFailed Class = "HostPreparationFailed"
	// ContainerRuntimeUnavailable: containerd is not running or not answering on the CRI socket.
	ContainerRuntimeUnavailable Class = "ContainerRuntimeUnavailable"
	// KubeletFailed: the kubelet did not start or did not become healthy.
	KubeletFailed Class = "KubeletFailed"
	// ControlPlaneUnhealthy: the API server or another control-plane component did not become healthy.
	ControlPlaneUnhealthy Class = "ControlPlaneUnhealthy"
	// EtcdUnhealthy: the local etcd member did not start or join.
	EtcdUnhealthy Class = "EtcdUnhealthy"
	// DiscoveryFailed: cluster discovery failed (wrong CA cert hash, bad token, cluster-info unreadable).
	DiscoveryFailed Class = "DiscoveryFailed"
	// TLSBootstrapFailed: the kubelet's TLS bootstrap (CSR) failed.
	TLSBootstrapFailed Class = "TLSBootstrapFailed"
	// DomainJoinFailed: joining the Active Directory domain failed (credentials, domain controller, computer account).
	DomainJoinFailed Class = "DomainJoinFailed"
	// RebootRequired: a step (the Windows domain join) finished and the machine must reboot before the run continues.
	RebootRequired Class = "RebootRequired"
	// Timeout: a bounded wait ran out (endpoint unreachable, component too slow).
	Timeout Class = "Timeout"
	// Interrupted: the run was stopped by a signal (SIGTERM, SIGINT).
	Interrupted Class = "Interrupted"
	// Internal: a bug or an unclassified failure.
	Internal Class = "Internal"
)

// Error is an error that carries its report class and a hint for a person.
// Code that knows why something failed wraps the cause with New; the
// report takes the outermost class found with errors.As.
type Error struct {
	// Class is the report class.
	Class Class
	// Hint says what to check, in one sentence for a person.
	Hint string
	// Err is the cause.
	Err error
}

// New wraps err with a class and a hint.
func New(class Class, hint string, err error) *Error {
	return &Error{Class: class, Hint: hint, Err: err}
}

// Errorf is New with a formatted cause (%w is supported).
func Errorf(class Class, hint, format string, args ...any) *Error {
	return &Error{Class: class, Hint: hint, Err: fmt.Errorf(format, args...)}
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Of returns the class and hint carried by err, or Internal and an empty
// hint when err carries none.
func Of(err error) (Class, string) {
	var re *Error
	if errors.As(err, &re) {
		return re.Class, re.Hint
	}
	return Internal, ""
}

// classes lists every class in the order docs/report.md describes them.
var classes = []Class{
	InvalidSpec, PreflightFailed, PayloadUnavailable, VerificationFailed,
	HostPreparationFailed, ContainerRuntimeUnavailable, KubeletFailed,
	ControlPlaneUnhealthy, EtcdUnhealthy, DiscoveryFailed, TLSBootstrapFailed,
	DomainJoinFailed, RebootRequired, Timeout, Interrupted, Internal,
}

// All returns every error class, in documentation order.
func All() []Class { return append([]Class(nil), classes...) }

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
// the error nor classification gives a more precise hint.
var defaultHints = map[Class]string{
	InvalidSpec:                 "Fix the machine spec: run `machineadm config validate -f SPEC`, which lists every invalid field with its path.",
	PreflightFailed:             "Read the [ERROR ...] lines of the log tail; fix the host or list the check in spec.node.ignorePreflightErrors if it is safe.",
	PayloadUnavailable:          "Check that every file, secret and URL the spec references exists and is readable from this machine.",
	VerificationFailed:          "The downloaded content differs from its pinned digest or signature: check the source and the sha256 in the spec.",
	HostPreparationFailed:       "Check the failed host step's message: file paths, permissions, sysctl names and kernel modules available on this OS.",
	ContainerRuntimeUnavailable: "Check that containerd runs and answers on spec.node.criSocket: `systemctl status containerd`, `crictl info`.",
	KubeletFailed:               "Check the kubelet: `systemctl status kubelet`, `journalctl -u kubelet`; cgroup driver and swap are common causes.",
	ControlPlaneUnhealthy:       "Check the control-plane static pods: `crictl ps -a`, `crictl logs <container>`, and the API server's certificates and flags.",
	EtcdUnhealthy:               "Check the etcd member: `crictl logs` of the etcd container, the data directory, peer ports 2379/2380 and the etcd certificates.",
	DiscoveryFailed:             "Check spec.join: the CA cert hash must match the cluster CA (`machineadm pki init` prints it) and the token must exist and not be expired.",
	TLSBootstrapFailed:          "Check that the token may create CSRs and that the controller manager approves and signs them (`kubectl get csr`).",
	DomainJoinFailed:            "Check spec.host.domainJoin: the domain's DNS name resolves and its domain controller answers (LDAP 389, Kerberos 88), the account may join computers to the OU, and the password or offline-join blob is current.",
	RebootRequired:              "The machine must reboot to finish the domain join; the first-boot script reboots and runs `machineadm bootstrap` again, which resumes after the join.",
	Timeout:                     "Check that the endpoint is reachable from this machine (address, port, firewall, load balancer) and the timeout is long enough.",
	Interrupted:                 "The run was stopped by a signal; run `machineadm bootstrap` again: it continues from where the host is.",
	Internal:                    "This is a machineadm bug or an unclassified failure: read the error and the log tail, and report it with this report attached.",
}

// InterruptedHint is the hint of a run of the machineadm command command
// ("bootstrap", "prepare") stopped by a signal: it names that command,
// the one to run again. An empty command gives DefaultHint(Interrupted).
func InterruptedHint(command string) string {
	if command == "" {
		return DefaultHint(Interrupted)
	}
	return "The run was stopped by a signal; run `machineadm " + command + "` again with the same spec and flags: it continues from where the host is."
}

// DefaultHint returns the generic hint for class c ("" for an unknown class).
func DefaultHint(c Class) string { return defaultHints[c] }
