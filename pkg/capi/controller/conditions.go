package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/machineadm/machineadm/pkg/capi/api/v1alpha1"
)

// Condition types of a MachineadmConfig.
const (
	// ReadyCondition summarises the config for the Machine (bootstrap
	// contract v1beta2): True once the data Secret is available.
	ReadyCondition = "Ready"
	// DataSecretAvailableCondition is True once the data Secret exists.
	DataSecretAvailableCondition = "DataSecretAvailable"
	// BootstrapSucceededCondition mirrors the node's reported outcome:
	// True on success; False with the error class as reason and the
	// failing phase and hint in the message.
	BootstrapSucceededCondition = "BootstrapSucceeded"
	// PausedCondition is True while the Cluster or the config is paused.
	PausedCondition = "Paused"
)

// Reasons.
const (
	ReasonAvailable                = "Available"
	ReasonTokenReplaced            = "TokenReplaced"
	ReasonAdopted                  = "Adopted"
	ReasonWaitingForMachine        = "WaitingForMachine"
	ReasonWaitingForInfrastructure = "WaitingForClusterInfrastructure"
	ReasonWaitingForInit           = "WaitingForControlPlaneInitialized"
	ReasonWaitingForInitLock       = "WaitingForInitLock"
	ReasonWaitingForKubeconfig     = "WaitingForKubeconfig"
	ReasonInvalidConfig            = "InvalidConfig"
	ReasonMissingCA                = "MissingCertificateAuthority"
	ReasonMissingSecret            = "MissingSecret"
	ReasonSealerUnavailable        = "SealerUnavailable"
	ReasonSealingFailed            = "SealingFailed"
	ReasonRenderFailed             = "RenderFailed"
	ReasonLeakRefused              = "SecretInTheClear"
	ReasonDataTooLarge             = "DataTooLarge"
	ReasonDataSecretMissing        = "DataSecretMissing"
	ReasonDataSecretNameTaken      = "DataSecretNameTaken"
	// ReasonInvalidCA: a CA Secret's certificate and key do not belong
	// together (InvalidCAError); looked at again every secretRetry.
	ReasonInvalidCA = "InvalidCertificateAuthority"
	// ReasonDataRewritten: a Secret of the data Secret's name, type and
	// controller existed that the config's Machine did not name; the data
	// was rendered again into it rather than adopted.
	ReasonDataRewritten       = "DataRewritten"
	ReasonWorkloadUnreachable = "WorkloadClusterUnreachable"
	ReasonInternalError       = "InternalError"
	ReasonWaitingForNode      = "WaitingForNode"
	ReasonWaitingForReport    = "WaitingForReport"
	ReasonSucceeded           = "Succeeded"
	ReasonPaused              = "Paused"
	ReasonNotPaused           = "NotPaused"
	ReasonDeleting            = "Deleting"
)

func setCond(c *bootstrapv1.MachineadmConfig, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: c.Generation,
	})
}

// setData sets DataSecretAvailable and Ready together.
func setData(c *bootstrapv1.MachineadmConfig, status metav1.ConditionStatus, reason, msg string) {
	setCond(c, DataSecretAvailableCondition, status, reason, msg)
	setCond(c, ReadyCondition, status, reason, msg)
}
