package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newRenderCommand is a placeholder until its issue lands.
func newRenderCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:    "render",
		Short:  "(not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("render is not implemented yet")
		},
	}
}
