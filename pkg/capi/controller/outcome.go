package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	"github.com/machineadm/machineadm/pkg/printable"
	"github.com/machineadm/machineadm/pkg/report/nodeannotation"
)

// nodeReport is the value of the machineadm.io/bootstrap-report Node
// annotation (pkg/report/nodeannotation.Value); the failure fields are
// read when present.
type nodeReport struct {
	Result      string `json:"result"`
	Action      string `json:"action"`
	DurationMs  int64  `json:"durationMs"`
	Machineadm  string `json:"machineadmVersion"`
	FailedPhase string `json:"failedPhase"`
	ErrorClass  string `json:"errorClass"`
	Hint        string `json:"hint"`
	Compliance  string `json:"compliance"`
}

// parseOutcome turns the annotation value into the status outcome.
func parseOutcome(v string) (*bootstrapv1.BootstrapOutcome, error) {
	var r nodeReport
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", nodeannotation.Annotation, err)
	}
	if r.Result == "" {
		return nil, fmt.Errorf("annotation %s has no result", nodeannotation.Annotation)
	}
	// The annotation comes from the node or from whoever holds the report
	// capability (it travels in the user data in the clear): its control
	// characters are escaped, so that no terminal escape sequence reaches
	// kubectl describe or clusterctl describe raw, and it is bounded so
	// that the status and its condition always fit (a condition message
	// holds at most 32 KiB).
	return &bootstrapv1.BootstrapOutcome{
		Result: outcomeField(r.Result, maxOutcomeField), FailedPhase: outcomeField(r.FailedPhase, maxOutcomeField), ErrorClass: outcomeField(r.ErrorClass, maxOutcomeField),
		Hint: outcomeField(r.Hint, maxHintBytes), DurationMs: r.DurationMs, MachineadmVersion: outcomeField(r.Machineadm, maxOutcomeField),
		Compliance: outcomeField(r.Compliance, maxOutcomeField),
	}, nil
}

// outcomeField is a reported field as the status shows it: control
// characters escaped, then cut to at most n bytes.
func outcomeField(v string, n int) string { return clip(printable.Show(v, printable.Line), n) }

// Bounds of a reported outcome's fields, in bytes.
const (
	maxOutcomeField = 256
	maxHintBytes    = 2048
)

// reasonRE is what the API server takes as a condition reason
// (metav1.Condition).
var reasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// clip cuts s to at most n bytes, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// applyOutcome mirrors the node's outcome o into the config's conditions:
// BootstrapSucceeded True, or False with the error class as reason and
// the failing phase, class and hint in the message; and Ready, which the
// Machine shows as BootstrapConfigReady, False on a failure with a reason
// that names the phase (phaseReason: "KubeletStartFailed") and True again
// when a rerun succeeded (while the data Secret is available).
func applyOutcome(cfg *bootstrapv1.MachineadmConfig, o *bootstrapv1.BootstrapOutcome) {
	cfg.Status.Outcome = o
	if o.Result == "Succeeded" {
		msg := strings.TrimSuffix(fmt.Sprintf("bootstrapped in %dms by machineadm %s; %s", o.DurationMs, o.MachineadmVersion, o.Compliance), "; ")
		setCond(cfg, BootstrapSucceededCondition, metav1.ConditionTrue, ReasonSucceeded, msg)
		if c := findCond(cfg, DataSecretAvailableCondition); c != nil && c.Status == metav1.ConditionTrue {
			setCond(cfg, ReadyCondition, metav1.ConditionTrue, ReasonSucceeded, msg)
		}
		return
	}
	reason := o.ErrorClass
	if !reasonRE.MatchString(reason) {
		reason = "Failed"
	}
	var msg []string
	if o.FailedPhase != "" {
		msg = append(msg, "phase "+o.FailedPhase+" failed")
	}
	if o.ErrorClass != "" {
		msg = append(msg, "class "+o.ErrorClass)
	}
	if o.Hint != "" {
		msg = append(msg, "hint: "+o.Hint)
	}
	if o.Compliance != "" {
		msg = append(msg, o.Compliance)
	}
	setCond(cfg, BootstrapSucceededCondition, metav1.ConditionFalse, reason, strings.Join(msg, "; "))
	setCond(cfg, ReadyCondition, metav1.ConditionFalse, phaseReason(o), strings.Join(msg, "; "))
}

// phaseReason is the Ready condition's reason for a failed outcome: the
// failed phase in CamelCase followed by "Failed" ("kubelet-start" →
// "KubeletStartFailed", "control-plane-prepare/download-certs" →
// "ControlPlanePrepareDownloadCertsFailed"); without a phase, the error
// class when it is a valid reason, else "BootstrapFailed". At most 100
// characters, as Kubernetes' condition reasons may not be longer than 1024
// and should be short.
func phaseReason(o *bootstrapv1.BootstrapOutcome) string {
	var b strings.Builder
	for _, word := range strings.FieldsFunc(o.FailedPhase, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		b.WriteString(strings.ToUpper(word[:1]) + word[1:])
	}
	name := b.String()
	if name == "" || name[0] < 'A' || name[0] > 'Z' {
		if reasonRE.MatchString(o.ErrorClass) && len(o.ErrorClass) <= 100 {
			return o.ErrorClass
		}
		return "BootstrapFailed"
	}
	if len(name) > 94 {
		name = name[:94]
	}
	return name + "Failed"
}

// outcomeSucceeded reports whether the config's mirrored outcome is a
// success.
func outcomeSucceeded(cfg *bootstrapv1.MachineadmConfig) bool {
	c := findCond(cfg, BootstrapSucceededCondition)
	return c != nil && c.Status == metav1.ConditionTrue
}

// readOutcome reads the Node's annotation; nil when the Node has none yet.
func readOutcome(ctx context.Context, wc corev1client.CoreV1Interface, node string) (*bootstrapv1.BootstrapOutcome, error) {
	ctx, cancel := context.WithTimeout(ctx, workloadTimeout)
	defer cancel()
	n, err := wc.Nodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, ok := n.Annotations[nodeannotation.Annotation]
	if !ok {
		return nil, nil
	}
	return parseOutcome(v)
}
