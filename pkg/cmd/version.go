package cmd

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/session"
	"github.com/machineadm/machineadm/pkg/version"
)

func newVersionCommand(o *options) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "version",
		Short: "Print machineadm's version and the embedded kubeadm's Kubernetes version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := version.Get()
			switch output {
			case "text":
				fmt.Fprintf(o.out, "machineadm %s (commit %s, %s, %s)\nkubernetes (embedded kubeadm) %s\n", v.Machineadm, v.GitCommit, v.GoVersion, v.Platform, v.Kubernetes)
			case "json":
				enc := json.NewEncoder(o.out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			default:
				return session.Usagef("--output must be text or json, got %q", output)
			}
			return nil
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return c
}
