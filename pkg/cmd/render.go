package cmd

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/render"
	"github.com/machineadm/machineadm/pkg/session"
)

// renderFlags are the flags of `machineadm render`.
type renderFlags struct {
	file, format, ignitionVersion      string
	agentURL, agentSHA256              string
	signatureURL, publicKeyFile        string
	caFile                             string
	payloadURL, payloadSHA256, maxSize string
	output                             string
	insecureInlineSecrets, gzip        bool
}

func newRenderCommand(o *options) *cobra.Command {
	f := &renderFlags{}
	c := &cobra.Command{
		Use:   "render -f SPEC --format FORMAT --agent-url URL --agent-sha256 HEX",
		Short: "Emit bootstrap data (" + render.FormatNames() + ") that installs machineadm and runs it",
		Long: `Renders bootstrap data for an OS bootstrapper. It holds no kubeadm or host
logic: a small stub gets the machineadm agent onto the machine, verifies its
SHA-256 digest (and optionally a signature) before anything runs, installs
it, writes the spec (mode 0600) and runs "machineadm bootstrap -f SPEC".

Formats:
` + formatHelp() + `
The agent comes from --agent-url: http(s):// (a release, object storage, a
mirror in the management cluster) with a required --agent-sha256;
oci://REGISTRY/REPOSITORY@sha256:DIGEST, a blob in a container registry
(or its blob URL http(s)://REGISTRY/v2/REPOSITORY/blobs/sha256:DIGEST),
pinned by that digest, the stub answering the registry's anonymous Bearer
token challenge (the token is kept off command lines and logs); or
file:///path for an agent already in the image (--agent-sha256 optional;
control characters in the decoded path are refused).
--agent-signature-url (http(s) or a registry blob) and --agent-public-key
add a signature check (Linux formats; checked with openssl on the machine).
--agent-ca pins the CA of an https agent server with a private CA (the
agent server of machineadm-controller) for the agent's downloads.

Secure by default: a spec with inline secrets (token/certificate key values,
private keys, tokens or passwords in files, manifests, configPatch or
extraArgs, registry client keys, credentials or presigned queries in proxy,
report or download URLs) is refused, and so are --agent-url,
--agent-signature-url and --payload-url with credentials, since user data
is readable by anyone with read access to the infrastructure. Seal them with
machineadm seal and render the sealed file (the spec and its SealedSecrets
document, carried byte for byte; it needs no --insecure-inline-secrets),
reference secrets as files delivered by a secure channel, or serve the spec
with --payload-url.

cloud-config with the agent in the image (file:// URL) and the spec inline
has no stub: runcmd runs the agent, after sha256sum -c when --agent-sha256
is given.

--gzip (cloud-config only) compresses the whole cloud-config with gzip,
which cloud-init decompresses before reading it; the spec and stub inside
are then plain text, so one compression covers them. A sealed control-plane
init is about a third smaller that way (docs/bootstrap-data-sizes.md).
--max-size counts the compressed bytes.

--payload-url makes the stub fetch the spec (upload the same file as -f)
instead of carrying it; its digest is computed from -f and must match
--payload-sha256 when given. --max-size fails when the output is too big:
a number of bytes greater than 0 or a preset: aws (16384), azure (65536),
openstack (65535 of base64), vsphere (65536 of base64); without it there is
no limit. -o FILE writes to FILE (mode 0600) instead of standard output;
-o - is standard output.

Exit codes: 0 written; 2 bad input (invalid spec, options, inline secrets,
over the size limit, an -o that is a directory or in a directory that does
not exist) and nothing written.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runRender(o, f) },
	}
	fl := c.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "machine spec path, or - for standard input")
	fl.StringVar(&f.format, "format", "", "output format: "+render.FormatNames()+" (see Formats above)")
	fl.StringVar(&f.ignitionVersion, "ignition-version", "", "Ignition config spec version for --format ignition: "+strings.Join(render.IgnitionVersions(), ", ")+" (default "+render.DefaultIgnitionVersion+")")
	fl.StringVar(&f.agentURL, "agent-url", "", "where the machineadm agent comes from: http(s):// URL, oci://REGISTRY/REPOSITORY@sha256:DIGEST, or file:///path of an agent in the image")
	fl.StringVar(&f.agentSHA256, "agent-sha256", "", "hex SHA-256 digest of the agent (required for http(s) agent URLs; a registry blob's is its digest)")
	fl.StringVar(&f.signatureURL, "agent-signature-url", "", "http(s) URL of the agent's detached signature (base64 DER, as cosign sign-blob writes it)")
	fl.StringVar(&f.publicKeyFile, "agent-public-key", "", "PEM file of the ECDSA or RSA public key the signature must verify with")
	fl.StringVar(&f.caFile, "agent-ca", "", "PEM file of the CA certificates an https agent server is verified with instead of the machine's trust store (Linux formats)")
	fl.StringVar(&f.payloadURL, "payload-url", "", "http(s) URL the stub fetches the spec from instead of carrying it inline")
	fl.StringVar(&f.payloadSHA256, "payload-sha256", "", "hex SHA-256 digest of the spec at --payload-url (default: computed from -f)")
	fl.StringVar(&f.maxSize, "max-size", "", "fail when the output is larger: bytes (> 0), or aws, azure, openstack, vsphere (default: no limit)")
	fl.StringVarP(&f.output, "output", "o", "", "write to this file (mode 0600) instead of standard output; - is standard output")
	fl.BoolVar(&f.gzip, "gzip", false, "gzip-compress the whole output, which cloud-init decompresses (--format cloud-config only)")
	fl.BoolVar(&f.insecureInlineSecrets, "insecure-inline-secrets", false, "render a spec with inline secrets, or URLs with credentials, anyway; they become readable to anyone who can read the user data")
	return c
}

func runRender(o *options, f *renderFlags) error {
	if f.format == "" {
		return session.Usagef("--format is required: one of %s", render.FormatNames())
	}
	if err := checkOutFlag("output", f.output); err != nil {
		return err
	}
	data, err := session.ReadSpec(o.in, f.file)
	if err != nil {
		return err
	}
	loaded, err := session.LoadBytes(o.log, data, f.file)
	if err != nil {
		return err
	}
	opts := render.Options{
		Format:             render.Format(f.format),
		IgnitionVersion:    f.ignitionVersion,
		Agent:              render.AgentSource{URL: f.agentURL, SHA256: f.agentSHA256, SignatureURL: f.signatureURL},
		AllowInlineSecrets: f.insecureInlineSecrets,
		Gzip:               f.gzip,
	}
	if f.publicKeyFile != "" {
		if opts.Agent.PublicKey, err = render.ReadPublicKeyFile(f.publicKeyFile); err != nil {
			return session.Usagef("--agent-public-key: %v", err)
		}
	}
	if f.caFile != "" {
		if opts.Agent.CACert, err = render.ReadPublicKeyFile(f.caFile); err != nil {
			return session.Usagef("--agent-ca: %v", err)
		}
	}
	if opts.MaxSize, err = render.ParseLimit(f.maxSize); err != nil {
		return &session.UsageError{Err: err}
	}
	if f.payloadURL != "" {
		sum := sha256.Sum256(data)
		digest := hex.EncodeToString(sum[:])
		given := strings.ToLower(strings.TrimPrefix(f.payloadSHA256, "sha256:"))
		if given != "" && given != digest {
			return session.Usagef("--payload-sha256 %s does not match the spec given with -f (%s); upload exactly that file to --payload-url", given, digest)
		}
		opts.Payload = &render.PayloadSource{URL: f.payloadURL, SHA256: digest}
		if secrets := render.InlineSecrets(loaded.Config); len(secrets) > 0 && strings.HasPrefix(f.payloadURL, "http:") {
			o.log.Warn("the spec at --payload-url carries inline secrets and travels unencrypted over http", "fields", len(secrets))
		}
	} else if f.payloadSHA256 != "" {
		return session.Usagef("--payload-sha256 needs --payload-url")
	}
	if opts.AllowInlineSecrets {
		// Rendered anyway: say so, as the spec's own credential fields do.
		for _, w := range render.URLCredentialFlags(opts) {
			o.log.Warn("--insecure-inline-secrets: a URL credential goes into the user data, readable by anyone who can read it", "flag", w)
		}
	}

	if err := render.CheckSpecOS(opts.Format, loaded.Config); err != nil {
		return renderError(err)
	}
	out, err := render.Render(data, loaded.Config, opts)
	if err != nil {
		return renderError(err)
	}
	if f.output == "" || f.output == "-" {
		_, err = o.out.Write(out)
	} else {
		err = atomicfile.WriteFile(f.output, out, 0o600)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.errOut, "rendered bootstrap data: %s, %d bytes (limit %s)\n", f.format, len(out), opts.MaxSize.String())
	return nil
}

// formatHelp is the Formats list of render's help: one line per format of
// the registry, name and help, the help texts aligned after the longest
// name.
func formatHelp() string {
	var b strings.Builder
	width := 0
	for _, f := range render.FormatInfos() {
		width = max(width, len(f.Format))
	}
	for _, f := range render.FormatInfos() {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, f.Format, f.Help)
	}
	return b.String()
}

// renderError maps the renderer's input errors to exit code 2.
func renderError(err error) error {
	var (
		oe *render.OptionError
		se *render.InlineSecretsError
		ze *render.SizeError
	)
	if errors.As(err, &oe) || errors.As(err, &se) || errors.As(err, &ze) {
		return &session.UsageError{Err: err}
	}
	return err
}
