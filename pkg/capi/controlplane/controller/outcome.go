package controller

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
	bootstrapctl "github.com/machineadm/machineadm/pkg/capi/controller"
)

// machineOutcome is one Machine's machineadm outcome as its
// MachineadmConfig mirrors it; Config nil when the config is not found.
type machineOutcome struct {
	Machine string
	Config  *bootstrapv1.MachineadmConfig
}

// Reasons of MachinesBootstrappedCondition.
const (
	ReasonBootstrapFailed     = "BootstrapFailed"
	ReasonWaitingForBootstrap = "WaitingForBootstrap"
	ReasonBootstrapSucceeded  = "Succeeded"
)

// aggregateOutcomes folds the Machines' outcomes into one condition:
// False when any Machine's bootstrap failed (each named with its failed
// phase, error class and hint), Unknown while any has not reported, True
// when all succeeded.
func aggregateOutcomes(outs []machineOutcome) (metav1.ConditionStatus, string, string) {
	sort.Slice(outs, func(i, j int) bool { return outs[i].Machine < outs[j].Machine })
	var failed, pending []string
	for _, o := range outs {
		var c *metav1.Condition
		if o.Config != nil {
			c = meta.FindStatusCondition(o.Config.Status.Conditions, bootstrapctl.BootstrapSucceededCondition)
		}
		switch {
		case c != nil && c.Status == metav1.ConditionFalse:
			failed = append(failed, describeFailure(o.Machine, o.Config, c))
		case c == nil || c.Status != metav1.ConditionTrue:
			pending = append(pending, o.Machine)
		}
	}
	switch {
	case len(failed) > 0:
		return metav1.ConditionFalse, ReasonBootstrapFailed, strings.Join(failed, "; ")
	case len(pending) > 0:
		return metav1.ConditionUnknown, ReasonWaitingForBootstrap, fmt.Sprintf("%d of %d Machines have not reported a bootstrap outcome: %s", len(pending), len(outs), strings.Join(pending, ", "))
	}
	return metav1.ConditionTrue, ReasonBootstrapSucceeded, ""
}

func describeFailure(machine string, cfg *bootstrapv1.MachineadmConfig, c *metav1.Condition) string {
	o := cfg.Status.Outcome
	if o == nil {
		return fmt.Sprintf("Machine %s: %s", machine, c.Message)
	}
	s := "Machine " + machine + ": bootstrap failed"
	if o.FailedPhase != "" {
		s += " in phase " + o.FailedPhase
	}
	if o.ErrorClass != "" {
		s += " (" + o.ErrorClass + ")"
	}
	if o.Hint != "" {
		s += ": " + o.Hint
	}
	return s
}
