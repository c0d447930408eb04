package phases

import "github.com/machineadm/machineadm/pkg/report"

// classifyKubeadm gives a kubeadm phase failure a report class by phase
// name. It is replaced by report.Classify (which also reads the error
// text) once that lands.
func classifyKubeadm(phase string, err error) (report.Class, string) {
	switch phase {
	case "preflight":
		return report.ClassPreflightFailed, "read the failed checks above; fix them or list them in spec.node.ignorePreflightErrors"
	case "wait-control-plane":
		return report.ClassControlPlaneUnhealthy, "check the static pods with crictl ps -a and the kubelet log"
	case "kubelet-start", "kubelet-wait-bootstrap":
		return report.ClassKubeletFailed, "check journalctl -u kubelet"
	case "etcd", "etcd-join":
		return report.ClassEtcdUnhealthy, "check the etcd container's log with crictl logs"
	}
	return report.ClassInternal, ""
}
