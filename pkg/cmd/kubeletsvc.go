package cmd

import "github.com/spf13/cobra"

// newKubeletServiceCommand is the hidden `kubelet-service` command, the
// program of the Windows kubelet service machineadm registers.
func newKubeletServiceCommand(o *options) *cobra.Command {
	var kubelet string
	c := &cobra.Command{
		Use:    "kubelet-service --kubelet PATH",
		Short:  "Run the kubelet as a Windows service (the service's program; not for people)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKubeletService(kubelet, o.log)
		},
	}
	c.Flags().StringVar(&kubelet, "kubelet", `C:\k\kubelet.exe`, "path of kubelet.exe")
	return c
}
