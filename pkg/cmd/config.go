package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/cmd/configcmd"
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
applies defaults and validates it — the numbers and durations of
spec.node.kubelet.config included, against the ranges the kubelet accepts
when it starts (maxPods -1, healthzPort 70000 or cpuCFSQuotaPeriod 2s are
errors at their field) — then has the embedded kubeadm validate the
configuration derived from it (with placeholder secrets), so that what
kubeadm would refuse — a Kubernetes version it cannot deploy, an unknown
feature gate — is found here. Every error is printed, one per line as
"path: message"; warnings are printed apart. Exit code 0 when valid, 2 when
not; warnings do not change it. Secret files referenced by the spec are not
read, but each one that does not exist on this machine (a token or
certificate key file, the CA set of spec.controlPlane.pki.dir) is a warning
naming its field and path: on the machine, bootstrap's inputs-check fails on
it. So is each that exists but that group or others may read (a token or
certificate key file, a *.key of the CA set): inputs-check warns too. A sealed file (machineadm seal) is checked without opening its
envelope: a secret the envelope carries is not warned about, and an item
the spec has no place for (a sealed file content whose mode was widened) is
an error, as is a clear spec edited after sealing (its digest is not the
envelope's specDigest: no machine would open it).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := configcmd.Validate(o.in, file)
			if err != nil {
				return err
			}
			for _, w := range l.Warnings {
				fmt.Fprintf(o.out, "warning: %s\n", shown(w.String()))
			}
			fmt.Fprintf(o.out, "%s: valid %s %s (role %s, action %s)\n", shown(file), l.APIVersion, l.Config.Kind, l.Config.Spec.Role, l.Config.Spec.Action)
			return nil
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "machine spec path, or - for standard input")
	return c
}

func newConfigDefaultsCommand(o *options) *cobra.Command {
	var role, action, file string
	var withContainerd bool
	c := &cobra.Command{
		Use:   "defaults [-f SPEC]",
		Short: "Print a machine spec with every default shown: your own (-f), or a new one",
		Long: `With -f SPEC, prints your own spec in the newest apiVersion with every
defaulted field filled in: what machineadm will actually use. Inline secret
values are shown redacted. The spec is validated first; an invalid one is
refused with its errors (exit 2).

Without -f, prints a new spec of the newest apiVersion for the given role
and action with every defaulted field filled in. Required fields without a
default get placeholders so that the output validates as it is; the header
lists the ones this role and action need (the endpoint
` + configcmd.PlaceholderEndpoint + `, where ".invalid" never resolves, and for
a join the token file, the all-zero CA hash and, for a control plane, the
certificate key file). Replace them before use.

spec.host.containerd is optional: without it machineadm leaves containerd's
configuration as the OS ships it. --containerd adds the block with its
defaults (machineadm then owns config.toml).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file != "" {
				for _, name := range []string{"role", "action", "containerd"} {
					if cmd.Flags().Changed(name) {
						return session.Usagef("--%s cannot be used with -f: the spec says it", name)
					}
				}
				out, l, err := configcmd.SpecDefaults(o.in, file)
				if err != nil {
					return err
				}
				for _, w := range l.Warnings {
					fmt.Fprintf(o.errOut, "warning: %s\n", shown(w.String()))
				}
				fmt.Fprintf(o.out, "# machineadm config defaults -f %s\n# Your spec with every default filled in (inline secrets redacted).\n", shown(file))
				_, err = o.out.Write(out)
				return err
			}
			out, action, placeholders, err := configcmd.Defaults(role, action, withContainerd)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "# machineadm config defaults --role %s --action %s\n# Replace these placeholders before use:\n", role, action)
			for _, p := range placeholders {
				fmt.Fprintf(o.out, "#   %s\n", p)
			}
			_, err = o.out.Write(out)
			return err
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "your machine spec (path, or - for standard input): print it with its defaults")
	c.Flags().StringVar(&role, "role", "ControlPlane", "ControlPlane or Worker (without -f)")
	c.Flags().StringVar(&action, "action", "", "Init or Join (without -f; default: Init for ControlPlane, Join for Worker)")
	c.Flags().BoolVar(&withContainerd, "containerd", false, "include spec.host.containerd with its defaults (without -f)")
	return c
}

func newConfigMigrateCommand(o *options) *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:   "migrate -f SPEC",
		Short: "Rewrite a machine spec in the newest apiVersion (" + machineadm.LatestAPIVersion + ")",
		Long: `Reads a spec of any supported apiVersion and prints it in the newest one,
without adding defaults. With only ` + machineadm.LatestAPIVersion + ` released so far
this normalises the document; it is the path older specs will take.
A sealed file is refused (exit 2): its envelope is bound to the clear spec
as it is; migrate the unsealed spec and seal it again.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := configcmd.Migrate(o.in, file)
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
