package cmd

import (
	"log/slog"

	"github.com/machineadm/machineadm/pkg/host/windows"
)

// runKubeletService runs the kubelet as the Windows service machineadm
// registers (`machineadm.exe kubelet-service --kubelet PATH`): it reads
// kubeadm's kubeadm-flags.env at every start and runs kubelet.exe. This is
// the one host package pkg/cmd imports, on Windows only: the service
// program is not a run (internal/fences names the exception).
func runKubeletService(kubeletPath string, log *slog.Logger) error {
	return windows.RunKubeletService(kubeletPath, log)
}
