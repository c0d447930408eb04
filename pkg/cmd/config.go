package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	"github.com/machineadm/machineadm/pkg/kubeadm"
	"github.com/machineadm/machineadm/pkg/session"
	"github.com/machineadm/machineadm/pkg/spec"
	"github.com/machineadm/machineadm/pkg/version"
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
			data, err := session.ReadSpec(o.in, file)
			if err != nil {
				return err
			}
			l, err := spec.Load(data, file)
			if err != nil {
				return err
			}
			if _, err := kubeadm.CheckSpec(l.Config, file); err != nil {
				return err
			}
			for _, w := range l.Warnings {
				fmt.Fprintf(o.out, "warning: %s\n", w)
			}
			fmt.Fprintf(o.out, "%s: valid %s %s (role %s, action %s)\n", file, l.APIVersion, v1alpha1.Kind, l.Config.Spec.Role, l.Config.Spec.Action)
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
` + placeholderEndpoint + ` (".invalid" never resolves), secret files under
/etc/machineadm/secrets/ and an all-zero CA hash. Replace them before use.

spec.host.containerd is optional: without it machineadm leaves containerd's
configuration as the OS ships it. --containerd adds the block with its
defaults (machineadm then owns config.toml).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := v1alpha1.MachineBootstrapConfig{
				APIVersion: v1alpha1.APIVersion,
				Kind:       v1alpha1.Kind,
				Spec: v1alpha1.MachineBootstrapSpec{
					Role:       v1alpha1.Role(role),
					Action:     v1alpha1.Action(action),
					Kubernetes: v1alpha1.Kubernetes{Version: defaultKubernetesVersion()},
				},
			}
			if withContainerd {
				cfg.Spec.Host.Containerd = &v1alpha1.Containerd{}
			}
			if action == "" {
				action = string(v1alpha1.ActionJoin)
				if role == string(v1alpha1.RoleControlPlane) {
					action = string(v1alpha1.ActionInit)
				}
				cfg.Spec.Action = v1alpha1.Action(action)
			}
			switch {
			case role != string(v1alpha1.RoleControlPlane) && role != string(v1alpha1.RoleWorker):
				return usagef("--role must be ControlPlane or Worker, got %q", role)
			case action != string(v1alpha1.ActionInit) && action != string(v1alpha1.ActionJoin):
				return usagef("--action must be Init or Join, got %q", action)
			case action == string(v1alpha1.ActionInit) && role == string(v1alpha1.RoleWorker):
				return usagef("--action Init needs --role ControlPlane")
			}
			fillPlaceholders(&cfg)
			v1alpha1.SetDefaults(&cfg)
			out, err := yaml.Marshal(&cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "# machineadm config defaults --role %s --action %s\n# Replace the placeholders before use: the endpoint %s, the all-zero\n# CA hash and the secret files under /etc/machineadm/secrets/.\n", role, action, placeholderEndpoint)
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
		Short: "Rewrite a machine spec in the newest apiVersion (" + spec.LatestAPIVersion + ")",
		Long: `Reads a spec of any supported apiVersion and prints it in the newest one,
without adding defaults. With only ` + spec.LatestAPIVersion + ` released so far
this normalises the document; it is the path older specs will take.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := session.ReadSpec(o.in, file)
			if err != nil {
				return err
			}
			latest, err := spec.Migrate(data, file)
			if err != nil {
				return err
			}
			out, err := yaml.Marshal(latest)
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

// Placeholders that `config defaults` puts into required fields without a
// default. The endpoint uses the reserved ".invalid" top-level domain (RFC
// 2606), so it can never reach a real host; secrets are referenced as
// files, never inline.
const (
	placeholderEndpoint    = "cluster-endpoint.invalid:6443"
	placeholderTokenFile   = "/etc/machineadm/secrets/bootstrap-token"
	placeholderCertKeyFile = "/etc/machineadm/secrets/certificate-key"
	placeholderCAHash      = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
)

// fillPlaceholders sets the required fields of cfg that have no default,
// by role and action.
func fillPlaceholders(cfg *v1alpha1.MachineBootstrapConfig) {
	s := &cfg.Spec
	s.Kubernetes.ControlPlaneEndpoint = placeholderEndpoint
	if s.Action == v1alpha1.ActionJoin {
		s.Join = &v1alpha1.Join{
			APIServerEndpoint: placeholderEndpoint,
			Token:             v1alpha1.SecretSource{File: placeholderTokenFile},
			CACertHashes:      []string{placeholderCAHash},
		}
		if s.Role == v1alpha1.RoleControlPlane {
			s.ControlPlane = &v1alpha1.ControlPlane{CertificateKey: &v1alpha1.SecretSource{File: placeholderCertKeyFile}}
		}
	}
}

// defaultKubernetesVersion is the embedded kubeadm's Kubernetes version,
// the version a spec without other constraints should target.
func defaultKubernetesVersion() string {
	if version.CheckStamped() == nil {
		return version.Get().Kubernetes
	}
	return "v1.37.2"
}
