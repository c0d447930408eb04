package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cpv1 "github.com/machineadm/machineadm/pkg/capi/controlplane/api/v1alpha1"
)

// Condition types on a MachineadmControlPlane. Available, RollingOut,
// ScalingUp, ScalingDown, Remediating, Deleting and Paused are Cluster
// API's (the Cluster controller reads them); the others are this
// provider's.
const (
	AvailableCondition   = clusterv1.AvailableCondition
	RollingOutCondition  = clusterv1.RollingOutCondition
	ScalingUpCondition   = clusterv1.ScalingUpCondition
	ScalingDownCondition = clusterv1.ScalingDownCondition
	RemediatingCondition = clusterv1.RemediatingCondition
	DeletingCondition    = clusterv1.DeletingCondition
	PausedCondition      = clusterv1.PausedCondition
	// CertificatesAvailableCondition: the CA Secrets and the kubeconfig
	// exist.
	CertificatesAvailableCondition = "CertificatesAvailable"
	// EtcdClusterHealthyCondition: every stacked etcd member answers.
	EtcdClusterHealthyCondition = "EtcdClusterHealthy"
	// MachinesReadyCondition: every Machine's Ready condition is True.
	MachinesReadyCondition = clusterv1.MachinesReadyCondition
	// MachinesUpToDateCondition: every Machine matches the spec.
	MachinesUpToDateCondition = "MachinesUpToDate"
	// MachinesBootstrappedCondition aggregates the machineadm outcome
	// (the bootstrap provider's BootstrapSucceeded condition and
	// status.outcome) of every Machine: False names each failed Machine
	// with its phase, class and hint.
	MachinesBootstrappedCondition = "MachinesBootstrapped"
)

// Other reasons.
const (
	ReasonWaitingForCluster        = "WaitingForCluster"
	ReasonWaitingForInfrastructure = "WaitingForClusterInfrastructure"
	ReasonPaused                   = "Paused"
	ReasonNotPaused                = "NotPaused"
	ReasonDeleting                 = "Deleting"
	ReasonNotDeleting              = "NotDeleting"
	ReasonAvailable                = "Available"
	ReasonNotAvailable             = "NotAvailable"
	ReasonCertificatesAvailable    = "Available"
	ReasonCertificatesFailed       = "CertificatesFailed"
	ReasonEtcdHealthy              = "Healthy"
	ReasonEtcdUnreachable          = "EtcdUnreachable"
	ReasonExternalEtcd             = "ExternalEtcd"
	ReasonReady                    = "Ready"
	ReasonNotReady                 = "NotReady"
	ReasonNotUpToDate              = "NotUpToDate"
	ReasonNotScaling               = "NotScaling"
	ReasonNotRollingOut            = "NotRollingOut"
	ReasonInvalidSpec              = "InvalidSpec"
	// ReasonKubeadmConfigNotUpdated: ScalingUp waits because the workload
	// cluster's kubeadm-config could not be set to spec.version before a
	// Machine of that version joins.
	ReasonKubeadmConfigNotUpdated = "KubeadmConfigNotUpdated"
)

func setCond(mcp *cpv1.MachineadmControlPlane, t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&mcp.Status.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: mcp.Generation,
	})
}

func boolStatus(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}
