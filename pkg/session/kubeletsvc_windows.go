package session

import (
	"log/slog"

	"github.com/machineadm/machineadm/pkg/host/windows"
)

// KubeletService runs the kubelet as the Windows service machineadm
// registers (`machineadm.exe kubelet-service --kubelet PATH`): it reads
// kubeadm's kubeadm-flags.env at every start and runs kubelet.exe
// (windows.RunKubeletService).
func KubeletService(kubeletPath string, log *slog.Logger) error {
	return windows.RunKubeletService(kubeletPath, log)
}
