package render

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	"github.com/machineadm/machineadm/pkg/readlimit"
	"github.com/machineadm/machineadm/pkg/render/quote"
)

// Options say how Render builds the bootstrap data.
type Options struct {
	// Format is the output format. Required.
	Format Format
	// IgnitionVersion is the Ignition config spec version for
	// FormatIgnition: "3.1.0" to "3.5.0" ("3.4" is accepted for "3.4.0").
	// Default DefaultIgnitionVersion.
	IgnitionVersion string
	// Agent says where the machineadm binary comes from. Required.
	Agent AgentSource
	// Payload, when set, makes the stub fetch the spec from a URL instead of
	// carrying it inline (R16: large specs, or specs that must not sit in
	// user data).
	Payload *PayloadSource
	// MaxSize bounds the size of the output; the zero Limit means no bound.
	MaxSize Limit
	// Gzip compresses the whole output with gzip (RFC 1952), which
	// cloud-init undoes before it reads user data ("gzip compressed
	// content" in cloud-init's user-data formats). The files inside are then
	// written as plain text where they can be, so that one compression
	// covers them all. FormatCloudConfig only: Ignition, a shell script run
	// by hand and Windows' bootstrappers do not decompress. MaxSize counts
	// the compressed bytes. Default false.
	Gzip bool
	// AllowInlineSecrets renders a spec that carries secret values inline,
	// and agent, signature and payload URLs that carry credentials
	// (validation.URLCredentials). Default false: such a spec is refused
	// with an *InlineSecretsError, such a URL with an *OptionError.
	AllowInlineSecrets bool
}

// AgentSource is where the stub gets the machineadm binary.
type AgentSource struct {
	// URL is where the agent comes from. Required. One of:
	//   - an http:// or https:// URL (a release, object storage, a mirror
	//     inside the management cluster);
	//   - a container registry blob: oci://REGISTRY/REPOSITORY@sha256:HEX
	//     (fetched over HTTPS from REGISTRY's /v2/ API; docker.io means
	//     registry-1.docker.io), or its blob URL
	//     http(s)://REGISTRY/v2/REPOSITORY/blobs/sha256:HEX (how a
	//     plain-http registry is named). The stubs answer the registry's
	//     anonymous Bearer challenge (401 with WWW-Authenticate: Bearer
	//     realm, service, scope: a token from the realm, then the blob with
	//     it); the token never reaches a command line or a log;
	//   - a file:// URL of an agent already in the machine image (nothing is
	//     downloaded).
	URL string
	// SHA256 is the agent's hex SHA-256 digest (64 hex digits). Required for
	// http(s) URLs; for a registry blob it is the blob's digest and may be
	// left out (when given it must be equal); optional for file:// URLs,
	// where it is checked when given.
	SHA256 string
	// SignatureURL is an http(s) URL, or a registry blob as URL accepts,
	// of a detached signature of the agent: base64 of an ASN.1 DER ECDSA
	// or RSA PKCS #1 v1.5 signature over the binary with SHA-256, as
	// `cosign sign-blob` writes it. Optional; needs PublicKey. Linux
	// formats only.
	SignatureURL string
	// PublicKey is the PEM public key (ECDSA or RSA) that SignatureURL's
	// signature must verify with (ReadPublicKeyFile reads it from a file).
	PublicKey []byte
	// CACert is a PEM bundle of CA certificates that an https agent (and
	// signature) download is verified against, instead of the machine's
	// own trust store: a server with a private CA, such as the agent server
	// of machineadm-controller. The shell stub hands it to curl (--cacert)
	// or wget (--ca-certificate) for those downloads only; Ignition adds it
	// to its trust (ignition.security.tls.certificateAuthorities). Optional;
	// Linux formats only, and not with a file:// URL.
	CACert []byte
}

// MaxPublicKeyFileSize bounds the file ReadPublicKeyFile reads (64 KiB):
// a PEM public key is at most a few KiB (RSA-4096 about 800 bytes).
const MaxPublicKeyFileSize = 64 << 10

// ReadPublicKeyFile reads AgentSource.PublicKey from path (`render
// --agent-public-key`), or AgentSource.CACert (`--agent-ca`), through
// readlimit.File: a regular file of at most
// MaxPublicKeyFileSize bytes, so that a FIFO or device given by mistake is
// refused at once (*readlimit.NotRegularError) instead of blocking, and a
// large file (*readlimit.TooLargeError) is not read whole.
func ReadPublicKeyFile(path string) ([]byte, error) {
	return readlimit.File(path, MaxPublicKeyFileSize)
}

// PayloadSource is a URL the stub fetches the spec from.
type PayloadSource struct {
	// URL is the http(s) URL of the spec. Required.
	URL string
	// SHA256 is the hex SHA-256 digest of the spec at URL. Required.
	SHA256 string
}

// OptionError is an invalid option; Flag names the command-line flag.
type OptionError struct {
	Flag string
	Msg  string
}

func (e *OptionError) Error() string { return e.Flag + ": " + e.Msg }

func optErr(flag, format string, args ...any) error {
	return &OptionError{Flag: flag, Msg: fmt.Sprintf(format, args...)}
}

// resolved are validated options in the form the formats use.
type resolved struct {
	Options
	// agentPath is the path of an agent already in the image (file:// URL),
	// empty when the agent is downloaded.
	agentPath string
	// publicKeyPEM is the public key re-encoded as PKIX PEM.
	publicKeyPEM string
	// caPEM is CACert's certificates re-encoded as PEM.
	caPEM string
	// registry is set when the agent or its signature comes from a
	// container registry (parseRegistrySource); Agent.URL and
	// Agent.SignatureURL are then the blobs' http(s) URLs, and the stubs
	// answer the registry's anonymous Bearer challenge.
	registry bool
	// reportPath is the spec's spec.report.path, "" for the default: the
	// report the Windows stub reads (stub.ReportPath).
	reportPath string
}

// resolve validates o and normalises digests and keys.
func resolve(o Options) (*resolved, error) {
	r := &resolved{Options: o}
	if !slices.Contains(Formats, o.Format) {
		return nil, optErr("--format", "unknown format %q; one of %s", o.Format, FormatNames())
	}
	for _, c := range urlFlags(o) {
		if err := checkURLCredentials(c.flag, c.url, o.AllowInlineSecrets); err != nil {
			return nil, err
		}
	}
	agentReg, err := parseRegistrySource("--agent-url", o.Agent.URL)
	if err != nil {
		return nil, err
	}
	if agentReg != nil {
		r.Agent.URL, r.registry = agentReg.URL, true
	}
	u, err := checkURL("--agent-url", r.Agent.URL, true)
	if err != nil {
		return nil, err
	}
	if r.Agent.SHA256, err = checkSHA256("--agent-sha256", o.Agent.SHA256); err != nil {
		return nil, err
	}
	if agentReg != nil {
		if r.Agent.SHA256, err = pinRegistryDigest(agentReg, "--agent-url", "--agent-sha256", r.Agent.SHA256); err != nil {
			return nil, err
		}
	}
	if u.Scheme == "file" {
		r.agentPath = u.Path
		if o.Format.windows() {
			r.agentPath = windowsPath(u.Path)
		}
		if err := checkAgentPath(o.Format, r.agentPath); err != nil {
			return nil, err
		}
	} else if r.Agent.SHA256 == "" {
		return nil, optErr("--agent-sha256", "required for an http(s) --agent-url: the agent is verified before it runs")
	}
	if err := r.resolveSignature(u); err != nil {
		return nil, err
	}
	if err := r.resolveCA(u); err != nil {
		return nil, err
	}
	if o.Payload != nil {
		if _, err := checkURL("--payload-url", o.Payload.URL, false); err != nil {
			return nil, err
		}
		p := *o.Payload
		if p.SHA256, err = checkSHA256("--payload-sha256", p.SHA256); err != nil {
			return nil, err
		}
		if p.SHA256 == "" {
			return nil, optErr("--payload-sha256", "required with --payload-url")
		}
		r.Payload = &p
	}
	if o.Gzip && o.Format != FormatCloudConfig {
		return nil, optErr("--gzip", "only applies to --format cloud-config (cloud-init decompresses gzip user data; %s's consumer does not)", o.Format)
	}
	if o.Format == FormatIgnition {
		if r.IgnitionVersion, err = ignitionVersion(o.IgnitionVersion); err != nil {
			return nil, err
		}
	} else if o.IgnitionVersion != "" {
		return nil, optErr("--ignition-version", "only applies to --format ignition")
	}
	return r, nil
}

// windowsForbidden are the characters Windows forbids in a file name
// (besides control characters and the separators).
const windowsForbidden = `"<>|*?`

// checkAgentPath checks the path of an agent in the image, percent-decoded
// from its file:// URL, before any format writes it into a script: no
// control or line-end character in any format (quote.ControlProblem:
// %0A, %00 ...), on Windows none of the characters Windows forbids in a
// file name, and for Ignition a path a systemd unit can run
// (quote.SystemdExecPath). The message shows the path escaped.
func checkAgentPath(f Format, p string) error {
	if msg := quote.ControlProblem(p); msg != "" {
		return optErr("--agent-url", "file URL path %+q %s: a path that reaches a script may not", p, msg)
	}
	if f.windows() && strings.ContainsAny(p, windowsForbidden) {
		return optErr("--agent-url", "file URL path %+q holds one of %s, which Windows forbids in a path", p, windowsForbidden)
	}
	if f == FormatIgnition {
		if _, err := quote.SystemdExecPath(p); err != nil {
			return optErr("--agent-url", "file URL path %+q: %v", p, err)
		}
	}
	return nil
}

// resolveSignature checks the signature URL and public key together.
func (r *resolved) resolveSignature(agent *url.URL) error {
	sig, key := r.Agent.SignatureURL, r.Agent.PublicKey
	switch {
	case sig == "" && len(key) == 0:
		return nil
	case sig == "":
		return optErr("--agent-signature-url", "required with --agent-public-key")
	case len(key) == 0:
		return optErr("--agent-public-key", "required with --agent-signature-url")
	case r.Format.windows():
		return optErr("--agent-signature-url", "not supported for --format %s: Windows has no tool to check this signature before machineadm exists; rely on --agent-sha256 (checked with Get-FileHash)", r.Format)
	case agent.Scheme == "file":
		return optErr("--agent-signature-url", "needs an http(s) --agent-url; an agent in the image is trusted with the image")
	}
	sigReg, err := parseRegistrySource("--agent-signature-url", sig)
	if err != nil {
		return err
	}
	if sigReg != nil {
		r.Agent.SignatureURL, r.registry = sigReg.URL, true
	}
	if _, err := checkURL("--agent-signature-url", r.Agent.SignatureURL, false); err != nil {
		return err
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(key)
	if err != nil {
		return optErr("--agent-public-key", "not a PEM public key: %v", err)
	}
	switch pub.(type) {
	case *ecdsa.PublicKey, *rsa.PublicKey:
	default:
		return optErr("--agent-public-key", "%T is not supported: the stub verifies with `openssl dgst -sha256 -verify`, so use an ECDSA or RSA key", pub)
	}
	if _, err := signature.LoadVerifier(pub, crypto.SHA256); err != nil {
		return optErr("--agent-public-key", "%v", err)
	}
	pemBytes, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		return optErr("--agent-public-key", "%v", err)
	}
	r.publicKeyPEM = string(pemBytes)
	return nil
}

// resolveCA checks CACert: PEM certificates only, for a download on a
// Linux format.
func (r *resolved) resolveCA(agent *url.URL) error {
	if len(r.Agent.CACert) == 0 {
		return nil
	}
	switch {
	case r.Format.windows():
		return optErr("--agent-ca", "not supported for --format %s: the Windows stubs use the machine's trust store", r.Format)
	case agent.Scheme == "file":
		return optErr("--agent-ca", "needs an http(s) --agent-url; nothing is downloaded for an agent in the image")
	}
	var b strings.Builder
	rest := r.Agent.CACert
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return optErr("--agent-ca", "holds a PEM %q block; only CERTIFICATE blocks belong there", blk.Type)
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return optErr("--agent-ca", "a certificate does not parse: %v", err)
		}
		b.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: blk.Bytes}))
	}
	if b.Len() == 0 || len(bytes.TrimSpace(rest)) > 0 {
		return optErr("--agent-ca", "not a PEM bundle of CA certificates")
	}
	r.caPEM = b.String()
	return nil
}

// urlFlag is a URL the stub carries in the user data, with the flag that
// gave it.
type urlFlag struct{ flag, url string }

// urlFlags are o's URLs that the stub carries, by flag: the agent's, its
// signature's ("" when not given) and the payload's when o has one.
func urlFlags(o Options) []urlFlag {
	urls := []urlFlag{{"--agent-url", o.Agent.URL}, {"--agent-signature-url", o.Agent.SignatureURL}}
	if o.Payload != nil {
		urls = append(urls, urlFlag{"--payload-url", o.Payload.URL})
	}
	return urls
}

// checkURLCredentials refuses a URL the stub would carry in user data when
// it holds a credential (validation.URLCredentials: user information, a
// presigned signature or a token in the query), unless allow
// (--insecure-inline-secrets). The URL is never quoted.
func checkURLCredentials(flag, raw string, allow bool) error {
	if raw == "" || allow {
		return nil
	}
	if what := validation.URLCredentials(raw); what != "" {
		return optErr(flag, "the URL carries %s, which would be readable by anyone who can read this machine's user data; "+
			"serve it from a location that needs no credential in the URL (a private network, the management cluster, "+
			"an instance-identity-authorised bucket), or pass --insecure-inline-secrets", what)
	}
	return nil
}

// URLCredentialFlags names each URL flag of o that carries a credential
// (validation.URLCredentials), with what it carries: "--agent-url:
// credentials in the URL". Without AllowInlineSecrets such a URL is
// refused; with it, it is written into the user data, and the command
// warns about each one named here. The phrases never quote the URL.
func URLCredentialFlags(o Options) []string {
	var out []string
	for _, u := range urlFlags(o) {
		if what := validation.URLCredentials(u.url); u.url != "" && what != "" {
			out = append(out, u.flag+": "+what)
		}
	}
	return out
}

// shownURL is raw as error messages may show it: without user
// information, query and fragment when it carries a credential.
func shownURL(raw string) string {
	if validation.URLCredentials(raw) == "" {
		return raw
	}
	s := raw
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	if ui, ok := machineadm.URLUserinfo(s); ok {
		s = strings.Replace(s, ui+"@", "", 1)
	}
	return s + " (credentials removed)"
}

// checkURL parses an http(s) URL (or a file URL when allowFile) and
// refuses characters that have no business in a URL.
func checkURL(flag, raw string, allowFile bool) (*url.URL, error) {
	if raw == "" {
		return nil, optErr(flag, "required")
	}
	shown := shownURL(raw)
	if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, optErr(flag, "%q contains white space or control characters", shown)
	}
	// A URL is ASCII (RFC 3986); other bytes would be re-encoded on the way
	// (JSON and PowerShell turn invalid UTF-8 into U+FFFD), so the machine
	// would fetch another URL than the one given. Found by FuzzRenderIgnition.
	if strings.ContainsFunc(raw, func(r rune) bool { return r >= 0x80 }) {
		return nil, optErr(flag, "%q contains characters outside ASCII; percent-encode them (RFC 3986)", shown)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, optErr(flag, "%q does not parse as a URL", shown)
	}
	switch {
	case u.Scheme == "http" || u.Scheme == "https":
		if u.Host == "" {
			return nil, optErr(flag, "%q has no host", shown)
		}
		// url.Parse takes any digits for a port; a port out of range
		// would only fail on the machine, at every boot.
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return nil, optErr(flag, "%q: port %s is not between 1 and 65535", shown, p)
			}
		}
	case u.Scheme == "file" && allowFile:
		if u.Host != "" && u.Host != "localhost" {
			return nil, optErr(flag, "file URL %q names a host; use file:///absolute/path", shown)
		}
		if !strings.HasPrefix(u.Path, "/") {
			return nil, optErr(flag, "file URL %q needs an absolute path", shown)
		}
		// The path names the agent binary itself: a directory ("/", a
		// trailing slash) or a path with "." or ".." segments or doubled
		// slashes would run something else than what the URL seems to say.
		// Found by FuzzRenderPowerShell ("fiLe:/").
		if strings.HasSuffix(u.Path, "/") || path.Clean(u.Path) != u.Path {
			return nil, optErr(flag, "file URL %q must name the agent file by a clean absolute path (no trailing slash, no . or .. segments)", shown)
		}
	case allowFile:
		return nil, optErr(flag, "%q: scheme must be http, https, oci or file", shown)
	default:
		return nil, optErr(flag, "%q: scheme must be http or https", shown)
	}
	return u, nil
}

// checkSHA256 lower-cases a hex SHA-256 digest, accepting an optional
// "sha256:" prefix; empty stays empty.
func checkSHA256(flag, s string) (string, error) {
	s = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s), "sha256:"))
	if s == "" {
		return "", nil
	}
	if b, err := hex.DecodeString(s); err != nil || len(b) != 32 {
		return "", optErr(flag, "%q is not a SHA-256 digest (64 hex digits)", s)
	}
	return s, nil
}

// windowsPath turns a file URL path "/C:/Program%20Files/x.exe" (already
// unescaped by url.Parse) into "C:\Program Files\x.exe".
func windowsPath(p string) string {
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:]
	}
	return strings.ReplaceAll(p, "/", `\`)
}
