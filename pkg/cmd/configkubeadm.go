package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/cmd/configcmd"
)

func newConfigKubeadmCommand(o *options) *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:   "kubeadm -f SPEC",
		Short: "Print the kubeadm configuration machineadm derives from a spec (for debugging, never an input)",
		Long: `Translates the spec into the kubeadm configuration documents of the kubeadm
config API version matching spec.kubernetes.version (kubeadm.k8s.io/v1beta4
for v1.31 to v1.37; the embedded kubeadm v1.37 deploys control planes of
v1.36 and v1.37), checks them with kubeadm's own validation and prints them.
A configuration kubeadm refuses is bad input (exit code 2). Secrets are replaced by placeholders of the right shape; secret files
are not read. A control plane under spec.security.profile that configures no
encryption at rest is shown with the encryption the bootstrap gives it from
the CA set's encryption.key (the API server's --encryption-provider-config
and its volume); the key is not read. machineadm never takes kubeadm YAML as
input.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			docs, err := configcmd.KubeadmConfig(o.in, o.log, file)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "# kubeadm configuration derived by machineadm (%s); secrets redacted\n", docs.APIVersion)
			_, err = o.out.Write(docs.YAML)
			return err
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "machine spec path, or - for standard input")
	return c
}
