package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/session"
)

func newConfigCommand(o *options) *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Check, show and migrate machine specs",
		Args:  noArgs,
	}
	c.AddCommand(newConfigValidateCommand(o), newConfigDefaultsCommand(o), newConfigKubeadmCommand(o), newConfigMigrateCommand(o))
	return c
}

func newConfigValidateCommand(o *options) *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:   "validate -f SPEC",
		Short: "Check a machine spec; print every problem with its field path",
		Long: `Decodes the spec strictly (unknown, duplicate and mistyped fields are errors),
applies defaults and validates it, then has the embedded kubeadm validate the
configuration derived from it (with placeholder secrets), so that what
kubeadm would refuse — a Kubernetes version it cannot deploy, an unknown
feature gate — is found here. Every error is printed, one per line as
"path: message"; warnings are printed apart. Exit code 0 when valid, 2 when
not. Secret files referenced by the spec are not read.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := session.Validate(o.in, file)
			if err != nil {
				return err
			}
			for _, w := range l.Warnings {
				fmt.Fprintf(o.out, "warning: %s\n", w)
			}
			fmt.Fprintf(o.out, "%s: valid %s %s (role %s, action %s)\n", file, l.APIVersion, l.Config.Kind, l.Config.Spec.Role, l.Config.Spec.Action)
			return nil
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "machine spec path, or - for standard input")
	return c
}

func newConfigDefaultsCommand(o *options) *cobra.Command {
	var role, action string
	var withContainerd bool
	c := &cobra.Command{
		Use:   "defaults",
		Short: "Print a complete machine spec with every default shown",
		Long: `Prints a machine spec of the newest apiVersion for the given role and action
with every defaulted field filled in. Required fields without a default get
placeholders so that the output validates as it is: the endpoint
` + session.PlaceholderEndpoint + ` (".invalid" never resolves), secret files under
/etc/machineadm/secrets/ and an all-zero CA hash. Replace them before use.

spec.host.containerd is optional: without it machineadm leaves containerd's
configuration as the OS ships it. --containerd adds the block with its
defaults (machineadm then owns config.toml).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, action, err := session.Defaults(role, action, withContainerd)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "# machineadm config defaults --role %s --action %s\n# Replace the placeholders before use: the endpoint %s, the all-zero\n# CA hash and the secret files under /etc/machineadm/secrets/.\n", role, action, session.PlaceholderEndpoint)
			_, err = o.out.Write(out)
			return err
		},
	}
	c.Flags().StringVar(&role, "role", "ControlPlane", "ControlPlane or Worker")
	c.Flags().StringVar(&action, "action", "", "Init or Join (default: Init for ControlPlane, Join for Worker)")
	c.Flags().BoolVar(&withContainerd, "containerd", false, "include spec.host.containerd with its defaults")
	return c
}

func newConfigMigrateCommand(o *options) *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:   "migrate -f SPEC",
		Short: "Rewrite a machine spec in the newest apiVersion (" + session.LatestAPIVersion + ")",
		Long: `Reads a spec of any supported apiVersion and prints it in the newest one,
without adding defaults. With only ` + session.LatestAPIVersion + ` released so far
this normalises the document; it is the path older specs will take.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := session.Migrate(o.in, file)
			if err != nil {
				return err
			}
			_, err = o.out.Write(out)
			return err
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "machine spec path, or - for standard input")
	return c
}
