package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"

	sigsjson "sigs.k8s.io/json"
)

// APIVersion and Kind identify the outcome report document.
const (
	// APIVersion is the report's API version, "machineadm.io/v1alpha1".
	APIVersion = "machineadm.io/v1alpha1"
	// Kind is the report's kind, "BootstrapReport".
	Kind = "BootstrapReport"
)

// Result is the outcome of a whole run.
type Result string

// The results of a run.
const (
	// ResultSucceeded means every phase succeeded, was unchanged or skipped.
	ResultSucceeded Result = "Succeeded"
	// ResultFailed means a phase failed, the run was interrupted, or it
	// failed before its first phase (for example an invalid spec).
	ResultFailed Result = "Failed"
)

// PhaseStatus is the outcome of one phase.
type PhaseStatus string

// The statuses of a phase.
const (
	// PhaseSucceeded means the phase ran and changed what it had to.
	PhaseSucceeded PhaseStatus = "Succeeded"
	// PhaseFailed means the phase failed or was interrupted.
	PhaseFailed PhaseStatus = "Failed"
	// PhaseSkipped means the phase did not run: skipped by --skip-phases,
	// not needed for this role or action, or not reached after a failure.
	PhaseSkipped PhaseStatus = "Skipped"
	// PhaseUnchanged means the phase found the host already as wanted and
	// changed nothing (a run after a success).
	PhaseUnchanged PhaseStatus = "Unchanged"
)

// BootstrapReport is the outcome report of one `machineadm bootstrap` or
// `machineadm prepare` run (apiVersion machineadm.io/v1alpha1, kind
// BootstrapReport), written as JSON by the report file writer (default
// /var/lib/machineadm/report.json) and the HTTP writer. Every string in it
// is redacted: it never holds a token, a certificate key or key material.
// See docs/report.md.
type BootstrapReport struct {
	// APIVersion is "machineadm.io/v1alpha1".
	APIVersion string `json:"apiVersion"`
	// Kind is "BootstrapReport".
	Kind string `json:"kind"`
	// Machine identifies the machine and the software that ran.
	Machine Machine `json:"machine"`
	// Command is the machineadm command that ran: "bootstrap", "prepare"
	// or "upgrade".
	Command string `json:"command"`
	// StartTime is when the run started (RFC 3339, UTC).
	StartTime time.Time `json:"startTime"`
	// EndTime is when the report was finished (RFC 3339, UTC).
	EndTime time.Time `json:"endTime"`
	// Result is Succeeded or Failed.
	Result Result `json:"result"`
	// Phases lists the phases in the order they started, phases that never
	// started (skipped, or not reached after a failure) last.
	Phases []Phase `json:"phases"`
	// FailedPhase names the phase that failed first; empty on success and
	// when the run failed outside a phase (an invalid spec).
	FailedPhase string `json:"failedPhase,omitempty"`
	// ErrorClass is the class of the failure, one of a fixed list
	// (docs/report.md): InvalidSpec, PreflightFailed, ... Empty on success.
	ErrorClass errclass.Class `json:"errorClass,omitempty"`
	// Hint tells a person what to check first. Empty on success.
	Hint string `json:"hint,omitempty" show:"text"`
	// Error is the error message of the failure. Empty on success.
	Error string `json:"error,omitempty" show:"text"`
	// ResumedFrom is the full name of the first phase this run ran after
	// skipping the phases that an earlier, unfinished run of the same spec
	// had completed (those are listed Skipped, "completed by an earlier run
	// of this spec"): where the run picked up after a crash, a kill or a
	// reboot. Empty when the run started from the first phase, and when a
	// finished run of the same spec made this one a no-op.
	ResumedFrom string `json:"resumedFrom,omitempty"`
	// NodeRegistered names the Node that a join registered in the cluster
	// before the run failed: its kubelet had finished the TLS bootstrap
	// (/etc/kubernetes/kubelet.conf exists), so the kubelet registers,
	// or has registered, the Node under this name. Delete it (`kubectl
	// delete node NAME`) before retrying the join on a reset or new
	// machine of the same name: kubeadm's kubelet-start refuses a Ready
	// Node of that name. Empty on success, for Init, and when the join
	// failed before its kubelet bootstrapped.
	NodeRegistered string `json:"nodeRegistered,omitempty"`
	// Upgrade is what an upgrade planned: the Kubernetes versions before
	// and after, and the changed fields. Only for command "upgrade", once
	// its plan was made.
	Upgrade *Upgrade `json:"upgrade,omitempty"`
	// LogTail holds the last lines (at most DefaultTailLines) of the
	// output of kubeadm and the kubelet checks recorded during the run,
	// oldest first. Empty when nothing was recorded.
	LogTail []string `json:"logTail,omitempty" show:"line"`
	// Compliance is the evidence of spec.security.profile: each check
	// that concerns this node with its verdict (PASS, FAIL, WARN,
	// NOT_APPLICABLE) and benchmark ID; in a dry run the checks the real
	// run would evaluate, each NOT_EVALUATED (Compliance.DryRun). Absent
	// without a profile, and when the run failed before the node was made
	// (a dry run: before its compliance/evidence phase).
	Compliance *Compliance `json:"compliance,omitempty"`
}

// Upgrade is the plan of an upgrade run, as the report records it.
type Upgrade struct {
	// FromVersion and ToVersion are spec.kubernetes.version of the node's
	// applied spec and of the new one ("v1.36.3", "v1.37.2").
	FromVersion string `json:"fromVersion"`
	ToVersion   string `json:"toVersion"`
	// Changes are the paths of the changed spec fields
	// ("spec.host.sysctl"); never values.
	Changes []string `json:"changes,omitempty" show:"line"`
}

// Machine identifies the machine a report is about.
type Machine struct {
	// Hostname is the host name of the machine (os.Hostname).
	Hostname string `json:"hostname"`
	// NodeName is the Kubernetes Node name (spec.node.name, default the
	// lower-cased host name). Empty for `prepare`.
	NodeName string `json:"nodeName,omitempty"`
	// SpecName is the machine spec's metadata.name. Optional.
	SpecName string `json:"specName,omitempty"`
	// MachineadmVersion is machineadm's version, for example "v0.1.0".
	MachineadmVersion string `json:"machineadmVersion"`
	// KubernetesVersion is the spec's Kubernetes version
	// (spec.kubernetes.version), for example "v1.37.2"; when no spec could
	// be read, the version of the kubeadm compiled into machineadm.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Role is spec.role: ControlPlane or Worker. Empty without a valid spec.
	Role string `json:"role,omitempty"`
	// Action is spec.action: Init or Join. Empty without a valid spec.
	Action string `json:"action,omitempty"`
}

// Phase is one phase of the run.
type Phase struct {
	// Name is the phase's name: kubeadm's phase name (preflight, certs,
	// kubelet-start, wait-control-plane, ...) or machineadm's own (files,
	// kernel-modules, sysctl, containerd, static-pods); a sub-phase is
	// "parent/child", as in "control-plane-join/etcd".
	Name string `json:"name"`
	// Status is Succeeded, Failed, Skipped or Unchanged.
	Status PhaseStatus `json:"status"`
	// StartTime is when the phase started (RFC 3339, UTC); for a phase that
	// never started, when it was recorded as skipped.
	StartTime time.Time `json:"startTime"`
	// DurationMs is how long the phase ran, in milliseconds, rounded to the
	// nearest (a phase of less than 0.5 ms reads 0).
	DurationMs int64 `json:"durationMs"`
	// Message says what the phase did, why it was skipped, or why it
	// failed. Optional.
	Message string `json:"message,omitempty" show:"text"`
	// Sysctl lists, for the sysctl phase on a running host, every kernel
	// parameter spec.host.sysctl sets, sorted by key, with its desired
	// value and the value read back from /proc/sys after all writes. A
	// value that differs fails the phase (HostPreparationFailed). Empty for
	// other phases, in a dry run and for `prepare --root`.
	Sysctl []SysctlValue `json:"sysctl,omitempty"`
	// Warnings are what the phase found wrong without failing, one line
	// each: for sysctl, a sysctl.d file applied after machineadm's that
	// sets another value at the next boot. Optional.
	Warnings []string `json:"warnings,omitempty" show:"text"`
}

// SysctlValue is one kernel parameter of spec.host.sysctl as the sysctl
// phase left it.
type SysctlValue struct {
	// Key is the parameter, as the spec names it: "net.ipv4.ip_forward".
	Key string `json:"key"`
	// Desired is the spec's value, white space normalised ("20000 60999").
	Desired string `json:"desired" show:"line"`
	// Effective is the value /proc/sys reads back after all writes,
	// normalised as Desired. Empty when it cannot be read (ReadError).
	Effective string `json:"effective,omitempty" show:"line"`
	// ReadError says why the value could not be read back (a write-only
	// parameter). Optional.
	ReadError string `json:"readError,omitempty" show:"text"`
	// BootValue is the value set at the next boot when that is not the
	// spec's value (a sysctl.d file applied after machineadm's). Optional.
	BootValue string `json:"bootValue,omitempty" show:"line"`
	// BootFile is the sysctl.d file (a machine path) that sets BootValue.
	// Optional.
	BootFile string `json:"bootFile,omitempty" show:"line"`
}

// Decode parses a report document strictly: one JSON object and nothing
// after it; field names matched case-sensitively; an unknown field, a key
// given twice in any object (at any depth: "phases[0].name" as well as
// "result"), a wrong apiVersion or kind, and missing required values are
// errors. JSON's own reader takes the last of duplicate keys, so a
// document whose readers could disagree is refused rather than shown.
func Decode(data []byte) (*BootstrapReport, error) {
	var r BootstrapReport
	strict, err := sigsjson.UnmarshalStrict(data, &r)
	if err != nil {
		return nil, fmt.Errorf("not a BootstrapReport document: %w", boundedError{err})
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("not a BootstrapReport document: %w", boundedError{errors.Join(strict...)})
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Validate checks the fields a reader relies on: apiVersion, kind, result,
// phase statuses and, for a failure, the error class.
func (r *BootstrapReport) Validate() error {
	switch {
	case r.APIVersion != APIVersion:
		return fmt.Errorf("report apiVersion is %s, want %q", quoteShort(r.APIVersion), APIVersion)
	case r.Kind != Kind:
		return fmt.Errorf("report kind is %s, want %q", quoteShort(r.Kind), Kind)
	case r.Result != ResultSucceeded && r.Result != ResultFailed:
		return fmt.Errorf("report result is %s, want %s or %s", quoteShort(string(r.Result)), ResultSucceeded, ResultFailed)
	case r.Result == ResultFailed && !r.ErrorClass.Known():
		return fmt.Errorf("failed report has error class %s, want one of %v", quoteShort(string(r.ErrorClass)), errclass.All())
	case r.StartTime.IsZero():
		return fmt.Errorf("report has no startTime")
	}
	if c := r.Compliance; c != nil {
		for i, ch := range c.Checks {
			if !slices.Contains(ComplianceVerdicts, ch.Verdict) {
				return fmt.Errorf("report compliance.checks[%d] (%s) has verdict %s", i, quoteShort(ch.ID), quoteShort(ch.Verdict))
			}
		}
	}
	for i, p := range r.Phases {
		switch p.Status {
		case PhaseSucceeded, PhaseFailed, PhaseSkipped, PhaseUnchanged:
		default:
			return fmt.Errorf("report phases[%d] (%s) has status %s", i, quoteShort(p.Name), quoteShort(string(p.Status)))
		}
	}
	return nil
}

// maxQuoted is the most bytes of a value that a Validate error quotes.
const maxQuoted = 64

// quoteShort quotes s (%q), cut to maxQuoted bytes with its length when
// longer: a report read back may hold anything.
// maxDecodeError bounds the text of a decoding error, in bytes.
const maxDecodeError = 512

// boundedError is a decoding error whose text is cut to maxDecodeError
// bytes (valid UTF-8, saying how long it was); errors.Is and errors.As
// still reach the error. encoding/json quotes in its error a value it
// cannot parse, a timestamp for one, whole: a report of megabytes made an
// error of megabytes (found by FuzzReadReport in a long run).
type boundedError struct{ err error }

func (e boundedError) Error() string {
	s := e.err.Error()
	if len(s) <= maxDecodeError {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", strings.ToValidUTF8(s[:maxDecodeError], ""), len(s))
}

func (e boundedError) Unwrap() error { return e.err }

func quoteShort(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…(%d bytes)", strings.ToValidUTF8(s[:maxQuoted], ""), len(s))
}

// Marshal encodes r as indented JSON with a final line break. "<", ">"
// and "&" are written as they are (not as \u003c...), so the file reads
// well: "<redacted>".
func (r *BootstrapReport) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Duration is the run's length, EndTime minus StartTime.
func (r *BootstrapReport) Duration() time.Duration { return r.EndTime.Sub(r.StartTime) }
