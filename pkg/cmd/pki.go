package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/kubeadm/pki"
	"github.com/machineadm/machineadm/pkg/session"
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
  DIR/encryption.key                     encryption-at-rest key (aescbc)

Keys are ECDSA P-256 unless --key-type says otherwise; private keys and
encryption.key are 0600 and DIR 0700. encryption.key (base64 of 32 random
bytes) is the key every control plane of the cluster encrypts Secrets in
etcd with: under spec.security.profile, a control plane whose spec gives
pki.dir and no spec.controlPlane.apiServer.encryption uses it. DIR is new or empty: a DIR holding files (CA files or any
other) or a file at DIR is refused with exit 2 and nothing changed; of two
runs into one DIR at once, one writes and the other is refused (DIR holds
.machineadm-pki-init while a run writes; one left by an interrupted run
means: empty DIR and run again). Point
spec.controlPlane.pki.dir at a copy of DIR delivered by a secure channel, and
put the printed hash in spec.join.caCertHashes of joining nodes.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return session.Usagef("--out DIR is required")
			}
			if !slices.Contains(pki.KeyTypes, keyType) {
				return session.Usagef("--key-type must be one of %v, got %q", pki.KeyTypes, keyType)
			}
			hash, err := pki.InitPKI(out, keyType, func(line string) { fmt.Fprintln(o.errOut, line) })
			if errors.Is(err, pki.ErrPKINotDir) {
				return session.Usagef("--out %v", err) // nothing was changed
			}
			if errors.Is(err, pki.ErrPKIExists) || errors.Is(err, pki.ErrPKIDirInUse) {
				return &session.UsageError{Err: err} // nothing was changed
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(o.errOut, "wrote the cluster CA set to %s (%s)\n", shown(out), keyType)
			fmt.Fprintln(o.out, hash)
			return nil
		},
	}
	initCmd.Flags().StringVar(&out, "out", "", "directory to create the CA set in")
	initCmd.Flags().StringVar(&keyType, "key-type", "ECDSA-P256", "key type: ECDSA-P256, ECDSA-P384, RSA-2048, RSA-3072 or RSA-4096")

	var dir string
	hashCmd := &cobra.Command{
		Use:   "hash DIR | hash --dir DIR",
		Short: "Print the sha256: CA cert hash of DIR/ca.crt",
		Long: `Prints the sha256: hash of the public key of DIR/ca.crt, the value joining
nodes pin in spec.join.caCertHashes. DIR is given as the argument or with
--dir (both at once must name the same directory).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return session.Usagef("%s takes at most one directory, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := dirArg(dir, args)
			if err != nil {
				return err
			}
			hash, err := pki.CACertHash(d)
			if err != nil {
				return &session.UsageError{Err: err}
			}
			fmt.Fprintln(o.out, hash)
			return nil
		},
	}
	hashCmd.Flags().StringVar(&dir, "dir", "", "directory holding ca.crt (or give it as the argument)")

	var keyOut string
	keyCmd := &cobra.Command{
		Use:   "certificate-key [--out FILE]",
		Short: "Create a certificate key (64 hex characters) for spec.controlPlane.certificateKey",
		Long: `Creates a random certificate key, with kubeadm's own code: the AES-256 key
with which the first control plane uploads the shared certificates to the
kubeadm-certs Secret and with which joining control planes download them.
With --out FILE it is written to FILE (mode 0600, its directory created
0700; an existing FILE is never overwritten) and nothing is printed on
standard output: point spec.controlPlane.certificateKey.file at the path
the file will have on the machine. Without --out it is printed; an empty
--out (an unset shell variable) is refused rather than printing it.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outGiven(cmd); err != nil {
				return err
			}
			return emitSecret(o, keyOut, "certificate key", pki.GenerateCertificateKey)
		},
	}
	keyCmd.Flags().StringVar(&keyOut, "out", "", "file to write the key to (mode 0600) instead of standard output")

	var encOut string
	encCmd := &cobra.Command{
		Use:   "encryption-key [--out FILE]",
		Short: "Create an encryption-at-rest key (base64 of 32 random bytes) for the API server's aescbc provider",
		Long: `Creates a random AES-256 key for encryption at rest: the base64 encoding of
32 random bytes, the form spec.controlPlane.apiServer.encryption's keys and
the API server's aescbc provider take. ` + "`machineadm pki init`" + ` already writes one
as DIR/encryption.key; use this command to add one to a CA set made before
(--out DIR/encryption.key), once, before the CA set is copied to the
control planes: control planes with different keys cannot read each
other's Secrets. With --out FILE it is written to FILE (mode
0600, its directory created 0700; an existing FILE is never overwritten:
data in etcd may already be encrypted with it) and nothing is printed on
standard output. Without --out it is printed; an empty --out (an unset
shell variable) is refused rather than printing it.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outGiven(cmd); err != nil {
				return err
			}
			return emitSecret(o, encOut, "encryption key", pki.GenerateEncryptionKey)
		},
	}
	encCmd.Flags().StringVar(&encOut, "out", "", "file to write the key to (mode 0600) instead of standard output")
	c.AddCommand(initCmd, hashCmd, keyCmd, encCmd)
	return c
}

func newTokenCommand(o *options) *cobra.Command {
	c := &cobra.Command{
		Use:   "token",
		Short: "Bootstrap token helpers",
		Args:  noArgs,
	}
	var out string
	gen := &cobra.Command{
		Use:   "generate [--out FILE]",
		Short: "Create a random bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})",
		Long: `Creates a random bootstrap token with kubeadm's own code. With --out FILE
it is written to FILE (mode 0600, its directory created 0700; an existing
FILE is never overwritten) and nothing is printed on standard output: point
spec.controlPlane.bootstrapTokens[].token.file (first control plane) and
spec.join.token.file (joining nodes) at the path the file will have on the
machine. Without --out it is printed; an empty --out (an unset shell
variable) is refused rather than printing it.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outGiven(cmd); err != nil {
				return err
			}
			return emitSecret(o, out, "bootstrap token", pki.GenerateToken)
		},
	}
	gen.Flags().StringVar(&out, "out", "", "file to write the token to (mode 0600) instead of standard output")
	c.AddCommand(gen)
	return c
}

// outGiven refuses an --out given empty (--out "$UNSET"): the secret would
// be printed on standard output, where the user asked for a file.
func outGiven(cmd *cobra.Command) error {
	if f := cmd.Flags().Lookup("out"); f != nil && f.Changed && f.Value.String() == "" {
		return session.Usagef("--out is empty: name the file to write the secret to, or leave --out out to print it")
	}
	return nil
}

// dirArg is the directory given as the only argument or with --dir; both
// must agree when both are given.
func dirArg(flag string, args []string) (string, error) {
	switch {
	case len(args) == 0 && flag == "":
		return "", session.Usagef("a directory is required: DIR or --dir DIR")
	case len(args) == 0:
		return flag, nil
	case flag != "" && filepath.Clean(flag) != filepath.Clean(args[0]):
		return "", session.Usagef("the argument %q and --dir %q name different directories; give one", args[0], flag)
	}
	return args[0], nil
}

// emitSecret makes a secret with gen and prints it, or with out writes it
// to the file out (0600, parent directories 0700) and names the file on
// standard error. An existing out is a usage error: a secret other
// machines may already hold is never replaced.
func emitSecret(o *options, out, what string, gen func() (string, error)) error {
	v, err := gen()
	if err != nil {
		return err
	}
	if out == "" {
		fmt.Fprintln(o.out, v)
		return nil
	}
	if strings.HasSuffix(out, "/") || strings.HasSuffix(out, string(filepath.Separator)) {
		// Else its directory was made and the link then refused as if a
		// file were there.
		return session.Usagef("--out %s names a directory: give the file's name in it", out)
	}
	if fi, err := os.Lstat(out); err == nil {
		if fi.IsDir() {
			return session.Usagef("--out %s is a directory: give the file's name in it", out)
		}
		return session.Usagef("--out %s: the file exists; it is never overwritten (remove it first)", out)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	// Create, not WriteFile: the check above is for the clear message; a
	// file made since (another run at the same time) is still never
	// replaced.
	if err := atomicfile.Create(out, []byte(v+"\n"), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return session.Usagef("--out %s: the file exists; it is never overwritten (remove it first)", out)
		}
		return err
	}
	fmt.Fprintf(o.errOut, "wrote a new %s to %s (0600)\n", what, shown(out))
	return nil
}
