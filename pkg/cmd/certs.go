package cmd

import (
	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
)

func newCertsCommand(o *options) *cobra.Command {
	c := &cobra.Command{
		Use:   "certs",
		Short: "Certificates of a control-plane node (kubeadm's certs commands, compiled in)",
	}
	c.AddCommand(newCertsCheckExpirationCommand(o))
	return c
}

func newCertsCheckExpirationCommand(o *options) *cobra.Command {
	var certDir, config, kubeconfig, output string
	c := &cobra.Command{
		Use:   "check-expiration",
		Short: "Print kubeadm's table of the certificates' and CAs' expiry (reads only)",
		Long: `Runs the embedded kubeadm's own 'certs check-expiration': one row per
certificate kubeadm manages (in --cert-dir, and embedded in the kubeconfig
files of /etc/kubernetes) with its expiry, residual time, CA and whether it
is externally managed, then the CAs. The cluster configuration comes from
--config, else the kubeadm-config ConfigMap read with --kubeconfig, else
kubeadm's defaults. It changes nothing; 'machineadm upgrade' renews the
certificates that expire within the renewal window (docs/upgrade.md).

Exit codes: 0 printed, 1 kubeadm failed, 2 usage.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var a []string
			for _, f := range []struct{ name, v string }{{"cert-dir", certDir}, {"config", config}, {"kubeconfig", kubeconfig}, {"output", output}} {
				if cmd.Flags().Changed(f.name) {
					a = append(a, "--"+f.name+"="+f.v)
				}
			}
			return day2.CheckExpiration(o.out, a)
		},
	}
	c.Flags().StringVar(&certDir, "cert-dir", "/etc/kubernetes/pki", "the certificates directory")
	c.Flags().StringVar(&config, "config", "", "a kubeadm configuration file (for example /var/lib/machineadm/kubeadm-init.yaml)")
	c.Flags().StringVar(&kubeconfig, "kubeconfig", "/etc/kubernetes/admin.conf", "the kubeconfig that reads the cluster's kubeadm-config ConfigMap")
	c.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json, yaml (kubeadm's)")
	return c
}
