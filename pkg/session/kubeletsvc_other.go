//go:build !windows

package session

import "log/slog"

// KubeletService is Windows-only: on other systems the kubelet is a
// systemd unit that kubeadm configures.
func KubeletService(string, *slog.Logger) error {
	return Usagef("kubelet-service runs only on Windows, as the kubelet's service program")
}
