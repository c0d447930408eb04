//go:build !windows

package cmd

import (
	"log/slog"

	"github.com/machineadm/machineadm/pkg/session"
)

// runKubeletService is Windows-only: on other systems the kubelet is a
// systemd unit that kubeadm configures. It returns a *session.UsageError
// (exit code 2).
func runKubeletService(string, *slog.Logger) error {
	return session.Usagef("kubelet-service runs only on Windows, as the kubelet's service program")
}
