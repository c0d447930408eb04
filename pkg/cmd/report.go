package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newReportCommand is a placeholder until its issue lands.
func newReportCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:    "report",
		Short:  "(not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("report is not implemented yet")
		},
	}
}
