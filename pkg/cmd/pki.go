package cmd

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/kubeadm"
)

func newPKICommand(o *options) *cobra.Command {
	c := &cobra.Command{
		Use:   "pki",
		Short: "Create and inspect the shared cluster CA set",
		Args:  noArgs,
	}
	var out, keyType string
	initCmd := &cobra.Command{
		Use:   "init --out DIR",
		Short: "Create the cluster CA set and print the CA cert hash that joining nodes pin",
		Long: `Creates, with kubeadm's own certificate code, the CA set that every
control-plane node of one cluster shares, in kubeadm's layout:

  DIR/ca.crt, ca.key                     cluster CA ("kubernetes")
  DIR/front-proxy-ca.crt, .key           front-proxy CA
  DIR/etcd/ca.crt, etcd/ca.key           etcd CA
  DIR/sa.key, sa.pub                     service-account key pair

Keys are ECDSA P-256 unless --key-type says otherwise; private keys are 0600
and DIR 0700. Existing CA files are never overwritten. Point
spec.controlPlane.pki.dir at a copy of DIR delivered by a secure channel, and
put the printed hash in spec.join.caCertHashes of joining nodes.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("--out DIR is required")
			}
			if !slices.Contains(kubeadm.KeyTypes, keyType) {
				return usagef("--key-type must be one of %v, got %q", kubeadm.KeyTypes, keyType)
			}
			hash, err := kubeadm.InitPKI(out, keyType, func(line string) { fmt.Fprintln(o.errOut, line) })
			if errors.Is(err, kubeadm.ErrPKIExists) {
				return &UsageError{Err: err} // nothing was changed
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(o.errOut, "wrote the cluster CA set to %s (%s)\n", out, keyType)
			fmt.Fprintln(o.out, hash)
			return nil
		},
	}
	initCmd.Flags().StringVar(&out, "out", "", "directory to create the CA set in")
	initCmd.Flags().StringVar(&keyType, "key-type", "ECDSA-P256", "key type: ECDSA-P256, ECDSA-P384, RSA-2048, RSA-3072 or RSA-4096")

	var dir string
	hashCmd := &cobra.Command{
		Use:   "hash --dir DIR",
		Short: "Print the sha256: CA cert hash of DIR/ca.crt",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usagef("--dir DIR is required")
			}
			hash, err := kubeadm.CACertHash(dir)
			if err != nil {
				return &UsageError{Err: err}
			}
			fmt.Fprintln(o.out, hash)
			return nil
		},
	}
	hashCmd.Flags().StringVar(&dir, "dir", "", "directory holding ca.crt")
	c.AddCommand(initCmd, hashCmd)
	return c
}

func newTokenCommand(o *options) *cobra.Command {
	c := &cobra.Command{
		Use:   "token",
		Short: "Bootstrap token helpers",
		Args:  noArgs,
	}
	c.AddCommand(&cobra.Command{
		Use:   "generate",
		Short: "Print a new random bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := kubeadm.GenerateToken()
			if err != nil {
				return err
			}
			fmt.Fprintln(o.out, t)
			return nil
		},
	})
	return c
}
