package cmd

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/seal/sealspec"
	"github.com/machineadm/machineadm/pkg/session"
)

func newKeygenCommand(o *options) *cobra.Command {
	var typ, suite, out string
	c := &cobra.Command{
		Use:   "keygen --type hpke|age|tpm2 --out FILE",
		Short: "Create a machine identity for sealed secrets and print its recipient string",
		Long: `Creates an identity that opens sealed secrets, writes it to the new file FILE
(mode 0600; an existing FILE is refused with exit 2) and prints its recipient
string for machineadm seal --recipient.

  hpke  HPKE (RFC 9180) key pair, suite p384 (DHKEM(P-384), HKDF-SHA384,
        AES-256-GCM; default, FIPS-approved) or mlkem768-p256 (hybrid
        post-quantum; adds about 1.6 KiB per recipient to user data)
  age   age X25519 (x25519, default) or ML-KEM-768+X25519 (hybrid) key;
        not allowed with GODEBUG=fips140=only
  tpm2  an ECDH P-256 key enrolled in this machine's TPM 2.0; FILE holds the
        TPM-wrapped key, which opens only in this TPM

On the machine the identity is read from /etc/machineadm/identity (mode
0600, owned by root) unless --identity says otherwise.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return session.Usagef("--out FILE is required")
			}
			suites, ok := sealspec.KeygenTypes[typ]
			if !ok {
				return session.Usagef("--type must be hpke, age or tpm2, got %q", typ)
			}
			if suite != "" && !slices.Contains(suites, suite) {
				return session.Usagef("--suite for --type %s must be one of %s, got %q", typ, strings.Join(suites, ", "), suite)
			}
			// Refused before any key is made (for tpm2, before one is
			// enrolled in the TPM); WriteIdentityFile's O_EXCL still
			// guards against a file created meanwhile.
			if _, err := os.Lstat(out); err == nil {
				return session.Usagef("--out %s exists; machineadm keygen never replaces an identity", shown(out))
			}
			r, err := sealspec.Keygen(typ, suite, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.errOut, "wrote a %s identity to %s (keep it secret)\n", typ, shown(out))
			fmt.Fprintln(o.out, r)
			return nil
		},
	}
	c.Flags().StringVar(&typ, "type", "hpke", "identity type: hpke, age or tpm2")
	c.Flags().StringVar(&suite, "suite", "", "hpke: p384 (default) or mlkem768-p256; age: x25519 (default) or hybrid")
	c.Flags().StringVar(&out, "out", "", "identity file to create")
	return c
}

func newSealCommand(o *options) *cobra.Command {
	var file, out, machine, root string
	var recipients []string
	c := &cobra.Command{
		Use:   "seal -f SPEC --recipient R [--recipient R2 ...] -o SEALED",
		Short: "Encrypt every secret a spec references so that only the target machine can read it",
		Long: `Reads every secret SPEC references (token and certificate-key files or
values, the CA set in spec.controlPlane.pki.dir, registry client keys, the
content of files whose mode is owner-only) and writes SEALED: the spec,
still valid and readable, with those secrets taken out, followed by a
SealedSecrets document that carries them encrypted to the recipients (any
one of them opens it). SEALED can go into user data as it is, unless the
spec has a URL with credentials (below).

The envelope is bound to the cluster name and to the machine name
(spec.node.name, or --machine-name; '*' makes a template for any machine
that holds the key). Recipient strings come from machineadm keygen:
hpke:..., tpm2:..., age1....; a cloud KMS key in binaries built with its tag
(kms_aws, kms_gcp, kms_azure, kms_vault or kms_all): aws-kms:arn:aws:kms:...,
gcp-kms:projects/..., azure-keyvault:https://..., vault-transit:https://...
(docs/sealed-secrets.md).

URLs with credentials (user:password@, a presigned or token query) are not
sealed, nor are secrets pasted where nothing is sealed (a private key in a
file readable by others, a password in the containerd configPatch, a token
in extraArgs): each is a warning, SEALED keeps it in the clear and is then
written with mode 0600 (else 0644), and machineadm render refuses it
without --insecure-inline-secrets.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" || out == "" || len(recipients) == 0 {
				return session.Usagef("-f SPEC, -o SEALED and at least one --recipient are required")
			}
			if err := checkOutFlag("out", out); err != nil {
				return err
			}
			// A --root that is no directory is bad usage (exit 2), as for
			// prepare, not a failed read of the spec's first secret file.
			absRoot, err := checkRoot(root)
			if err != nil {
				return err
			}
			data, err := session.ReadSpec(o.in, file)
			if err != nil {
				return err
			}
			sealed, err := sealspec.SealSpec(data, sealspec.SealOptions{Recipients: recipients, MachineName: machine, Root: absRoot})
			// A bad --recipient or --machine-name is a usage error (exit
			// 2), found before any secret is read or any KMS is called.
			if oe := (*sealspec.OptionError)(nil); errors.As(err, &oe) {
				if oe.Option == "MachineName" {
					return session.Usagef("--machine-name: %v", oe.Err)
				}
				return session.Usagef("--recipient%s: %v", strings.TrimPrefix(oe.Option, "Recipients"), oe.Err)
			}
			if err != nil {
				return err
			}
			// What is not sealed stays readable in SEALED: say so, and keep
			// such a file to its owner.
			mode := os.FileMode(0o644)
			where := shown(out) + " (written 0600)"
			if out == "-" {
				where = "standard output"
			}
			for _, p := range sealed.InClear {
				fmt.Fprintf(o.errOut, "warning: %s: %s is not sealed: it stays in the clear in %s, and machineadm render refuses it without --insecure-inline-secrets\n", p, sealed.InClearWhat[p], where)
				mode = 0o600
			}
			if out == "-" {
				_, err = o.out.Write(sealed.File)
			} else {
				err = atomicfile.WriteFile(out, sealed.File, mode)
			}
			if err != nil {
				return err
			}
			sz := sealspec.MeasureSize(sealed.File)
			fmt.Fprintf(o.errOut, "sealed %d item(s) for cluster %q, machine %q: %s (%d bytes; %d as gzip+base64)\n",
				len(sealed.Items), sealed.Binding.ClusterName, sealed.Binding.MachineName, strings.Join(sealed.Items, ", "), sz.Raw, sz.GzipBase64)
			return nil
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "machine spec to seal, - for standard input")
	c.Flags().StringArrayVar(&recipients, "recipient", nil, "recipient string (repeatable)")
	c.Flags().StringVarP(&out, "out", "o", "", "sealed file to write, - for standard output")
	c.Flags().StringVar(&machine, "machine-name", "", "node name the envelope opens on (default spec.node.name; '*' for a template)")
	c.Flags().StringVar(&root, "root", "/", "directory the spec's file paths are resolved in, as the machine's root: symbolic links, absolute ones too, never lead out of it; a spec.os windows spec's drive path D:\\x is read from ROOT/D/x (no drive: ROOT/C/...), or from the drive itself when ROOT is a drive's root")
	return c
}

func newUnsealCommand(o *options) *cobra.Command {
	var file, identity, nodeName string
	var check bool
	c := &cobra.Command{
		Use:   "unseal --check -f SEALED --identity FILE [--node-name NAME]",
		Short: "Say whether the machine would open a sealed spec, without printing any secret",
		Long: `Runs on SEALED the checks a machine runs when bootstrap or prepare opens
it, and prints which recipient opened it and the sealed field paths: the
clear spec is validated as bootstrap reads it; the SealedSecrets document
is opened with the identities in FILE (mode 0600) for the node name the
machine would use (spec.node.name, else this host's name; --node-name
NAME checks for another machine); the opened spec is validated again and
its tokens, certificate key and CA set are checked as inputs-check checks
them. "opens" means that the machine would accept it. No secret is
printed or written. A secret file the spec names outside the envelope is
checked when it exists here; otherwise it is listed as left to the
machine.

Exit code 0 when it opens and passes; 1 when it does not open
(VerificationFailed: another key, another node, a changed byte) or an
opened secret is refused (PayloadUnavailable, InvalidSpec); 2 when SEALED
holds no SealedSecrets document, a malformed one, or a clear spec that is
invalid, or --node-name is not a node name (an RFC 1123 subdomain). The clear spec in SEALED must be the one it was sealed with (the
envelope holds its digest): a clear spec edited after sealing does not
open, here or on the machine.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !check {
				return session.Usagef("only unseal --check is supported: secrets are opened by the machine, in memory")
			}
			if file == "" {
				return session.Usagef("-f SEALED is required")
			}
			res, err := session.UnsealCheck(o.in, file, identity, nodeName)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "opens: %s recipient %s (stanza %d) for cluster %q, machine %q, as node %q\n",
				res.By.Type, res.By.KeyID, res.By.Index, res.Binding.ClusterName, res.Binding.MachineName, shown(res.NodeName))
			for _, p := range res.Items {
				fmt.Fprintln(o.out, "  "+p)
			}
			for _, p := range res.Unchecked {
				fmt.Fprintf(o.out, "not checked here: %s.file is not on this machine (the machine checks it in inputs-check)\n", p)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&check, "check", false, "only check that the machine would open the file")
	c.Flags().StringVarP(&file, "file", "f", "", "sealed file, - for standard input")
	c.Flags().StringVar(&identity, "identity", sealspec.DefaultIdentityFile, "identity file")
	c.Flags().StringVar(&nodeName, "node-name", "", "node name of the machine to check for (default spec.node.name, else this host's name)")
	return c
}
