package evidence

import (
	"context"
	"os"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// Harden applies the profile's file remediations that exist only once
// kubeadm ran: the kubelet's config.yaml 0600 root:root (CIS 4.1.9,
// kubeadm writes 0644), the kubelet's unit files 0600 root:root (4.1.1,
// 4.1.2), and, on a static-pod control plane with a local etcd, the etcd
// account (cpunits.EtcdUser, the account the Systemd runtime runs etcd
// as; sysusers.d) owning the data directory, mode 0700 (1.1.11, 1.1.12;
// etcd runs as root in its pod and keeps access). The Systemd runtime's
// etcd phase gives its data directory that owner itself. It returns one
// line per change; with dryRun it changes nothing. Idempotent.
func Harden(ctx context.Context, n Node, run cpunits.Exec, dryRun bool) ([]string, error) {
	var changes []string
	if n.ControlPlane && !n.Systemd && n.EtcdDataDir != "" {
		line, err := cpunits.CreateUsers(ctx, n.Root, []cpunits.Account{{Name: cpunits.EtcdUser, Description: "etcd (machineadm security profile)"}}, run, dryRun)
		if err != nil {
			return nil, err
		}
		if line != "" {
			changes = append(changes, line)
		}
	}
	var rules []cpunits.PathRule
	for _, f := range append([]string{KubeletConfigFile}, KubeletServiceFiles...) {
		if _, err := os.Lstat(n.host(f)); err == nil {
			rules = append(rules, cpunits.PathRule{Path: f, Mode: 0o600, User: "root", Group: "root", Optional: true})
		}
	}
	if n.ControlPlane && !n.Systemd && n.EtcdDataDir != "" {
		rules = append(rules, cpunits.PathRule{Path: n.EtcdDataDir, Dir: true, Mode: 0o700, User: cpunits.EtcdUser, Group: cpunits.EtcdUser})
	}
	lines, err := cpunits.ApplyPaths(n.Root, rules, dryRun)
	return append(changes, lines...), err
}
