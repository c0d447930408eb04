package cmd

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/session"
)

// upgradeFlags are the flags of `upgrade`: bootstrap's, and the drain's.
type upgradeFlags struct {
	bootstrapFlags
	skipDrain    bool
	drainTimeout time.Duration
	kubeconfig   string
}

func newUpgradeCommand(o *options) *cobra.Command {
	f := &upgradeFlags{}
	c := &cobra.Command{
		Use:   "upgrade -f SPEC",
		Short: "Bring a bootstrapped node to a new spec: a new Kubernetes version, host and control-plane settings",
		Long: `Compares the spec this node was last brought to (recorded by bootstrap and
upgrade in /var/lib/machineadm/applied-spec.json, secrets withheld) with SPEC
and prints the plan: each changed field and what it does, then the phases
that apply the changes, in order. A change that cannot be made in place (the
role, the action, the cluster endpoint, the etcd topology, the control-plane
runtime, the node name, ...) is refused before anything changes: exit code 2,
naming each refused field and why. docs/upgrade.md has the table.

Otherwise the upgrade workflow runs, in order: inputs-check, upgrade-plan,
drain (cordon, then evict the node's pods through the Eviction API, so that
PodDisruptionBudgets hold; only when a change disrupts the node's
workloads), the host phases of bootstrap (files, apiserver-config: the API
server's audit, encryption, authentication and authorization files,
kernel-modules, sysctl, containerd: containerd restarts only when its
configuration changed),
kubeadm-upgrade (kubeadm's upgrade apply phases on the first control plane,
action Init; its upgrade node phases on every other node; in-process, the
kubeadm compiled into machineadm; on a runtime: Systemd control plane its
control-plane phase replaces the units' binaries, flags and environment
files instead, etcd first, one at a time, and the node's API endpoint comes
from the spec, as it has no kube-apiserver mirror pod), control-plane
(changed component settings, one component at a time: manifest regenerated
by kubeadm or unit rewritten, backed up, healthy before the next, rolled
back when not; a restarted unit is healthy once its health checks pass in
a row over 4 s and systemd did not restart it meanwhile), kubelet (restarted on its new binary or configuration;
waits until the Node reports the new version and, on a control plane,
until its API server, controller manager and scheduler pass kubeadm's
health checks several times in a row, at most 5 minutes), static-pods, certs-renew (control planes: kubeadm's certificates
that expire within the renewal window, then the components that read
them at start restarted one at a time), uncordon, compliance (with
spec.security.profile: harden, then the profile's checks on the upgraded
node), record-spec (the new
spec becomes the applied one). A changed typed API-server security setting
rewrites its files and restarts the API server once, also when only a
file's content changed. A phase the plan does not need reports
Unchanged; a second upgrade to the same spec changes nothing.

Run the first control plane first, then the other control planes, then
the workers, one node at a time. kubeadm's skew rules hold: one minor
version at a time, never down, and only to the embedded kubeadm's minor.

A run stopped at any phase (a crash, SIGKILL) resumes at the first phase
that did not finish when run again with the same SPEC. --dry-run prints
the plan and what each phase would do, and changes nothing. One run at a
time: upgrade takes bootstrap's lock.

Exit codes: 0 success, 1 the upgrade failed (see the report), 2 invalid
spec, a change that cannot be made in place, a node without an applied
spec, or usage (nothing was changed), 3 busy: another machineadm run holds
the lock (nothing was done).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			so := f.options(o, cmd, "")
			so.Command = session.Upgrade
			so.SkipDrain, so.DrainTimeout, so.Kubeconfig = f.skipDrain, f.drainTimeout, f.kubeconfig
			if f.drainTimeout < 0 {
				return session.Usagef("--drain-timeout must not be negative, got %s", f.drainTimeout)
			}
			if err := checkKubeconfigFlag(cmd, f.kubeconfig, f.skipDrain); err != nil {
				return err
			}
			return session.Run(cmd.Context(), so)
		},
	}
	f.bind(c, true)
	c.Flags().Lookup("dry-run").Usage = "change nothing: print the plan and what each phase would do (host phases print their writes); the node's applied-spec record and journal stay as they are"
	c.Flags().Lookup("skip-phases").Usage = "phases not to run, by full name: a parent (kubeadm-upgrade) skips its sub-phases; record-spec cannot be skipped, and a run that skips any phase does not record the spec, so a run without the flag finishes it; see docs/upgrade.md"
	c.Flags().BoolVar(&f.skipDrain, "skip-drain", false, "do not cordon, drain or uncordon the node (its pods keep running through the upgrade)")
	c.Flags().DurationVar(&f.drainTimeout, "drain-timeout", 0, "how long the drain may take before the upgrade fails (class DrainFailed); default 5m")
	c.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "credential that may cordon the node and evict its pods (default /etc/kubernetes/admin.conf, which only control planes have; a worker needs one, or --skip-drain); one given must exist and load, unless with --skip-drain, or the run is refused with exit code 2")
	return c
}
