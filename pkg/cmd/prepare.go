package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newPrepareCommand is a placeholder until its issue lands.
func newPrepareCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:    "prepare",
		Short:  "(not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("prepare is not implemented yet")
		},
	}
}
