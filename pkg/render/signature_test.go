package render

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// sign signs data with sigstore's signer for key (SHA-256) and returns the
// signature as `cosign sign-blob` writes it (base64 of the DER signature),
// after checking that sigstore's own verifier accepts it.
func sign(t *testing.T, key crypto.Signer, data []byte) []byte {
	t.Helper()
	sv, err := signature.LoadSignerVerifier(key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := sv.SignMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := sv.VerifySignature(bytes.NewReader(sig), bytes.NewReader(data)); err != nil {
		t.Fatalf("sigstore does not verify its own signature: %v", err)
	}
	return []byte(base64.StdEncoding.EncodeToString(sig) + "\n")
}

func publicPEM(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	p, err := cryptoutils.MarshalPublicKeyToPEM(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShellStubSignature runs the stub with a signature made by sigstore
// and checked on the "machine" with openssl, for ECDSA and RSA keys: a good
// signature lets the agent run; a signature over other content, or by
// another key, stops the stub before the agent runs.
func TestShellStubSignature(t *testing.T) {
	if _, err := lookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	for name, key := range map[string]crypto.Signer{"ecdsa-p256": ec, "rsa-2048": rk} {
		t.Run(name, func(t *testing.T) {
			srv := newAgentServer(t, map[string][]byte{
				"/agent":       agent,
				"/agent.sig":   sign(t, key, agent),
				"/wrong.sig":   sign(t, key, []byte("another build")),
				"/foreign.sig": sign(t, other, agent),
			})
			render := func(sig string) []byte {
				return shellFor(t, spec, Options{Agent: AgentSource{
					URL: srv.URL + "/agent", SHA256: sha256Hex(agent),
					SignatureURL: srv.URL + sig, PublicKey: publicPEM(t, key),
				}})
			}
			r := runStub(t, render("/agent.sig"))
			checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
			noTemp(t, filepath.Join(r.root, LinuxAgentPath))

			for _, bad := range []string{"/wrong.sig", "/foreign.sig"} {
				r := runStub(t, render(bad))
				if r.exitCode == 0 || r.ran() {
					t.Fatalf("%s: stub exit %d, agent ran %v", bad, r.exitCode, r.ran())
				}
				wantStderr(t, r, "signature does not verify")
				noFile(t, filepath.Join(r.root, LinuxAgentPath))
				noTemp(t, filepath.Join(r.root, LinuxAgentPath))
			}
		})
	}
}

func TestSignatureOptions(t *testing.T) {
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	data, cfg := loadExample(t, "worker")
	base := AgentSource{URL: testAgentURL, SHA256: testAgentSHA256, SignatureURL: testAgentURL + ".sig"}
	cases := map[string]struct {
		format Format
		agent  AgentSource
		flag   string
	}{
		"ed25519 key":           {FormatShell, withKey(base, publicPEM(t, edKey)), "--agent-public-key"},
		"not a key":             {FormatShell, withKey(base, []byte("hello")), "--agent-public-key"},
		"no key":                {FormatShell, base, "--agent-public-key"},
		"no signature url":      {FormatShell, AgentSource{URL: testAgentURL, SHA256: testAgentSHA256, PublicKey: publicPEM(t, ec)}, "--agent-signature-url"},
		"windows":               {FormatPowerShell, withKey(base, publicPEM(t, ec)), "--agent-signature-url"},
		"agent in image":        {FormatShell, AgentSource{URL: "file:///usr/bin/machineadm", SignatureURL: testAgentURL + ".sig", PublicKey: publicPEM(t, ec)}, "--agent-signature-url"},
		"signature url no http": {FormatShell, AgentSource{URL: testAgentURL, SHA256: testAgentSHA256, SignatureURL: "ftp://x/y", PublicKey: publicPEM(t, ec)}, "--agent-signature-url"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Render(data, cfg, Options{Format: c.format, Agent: c.agent})
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Flag != c.flag {
				t.Fatalf("err = %v, want an OptionError for %s", err, c.flag)
			}
		})
	}
}

func withKey(a AgentSource, key []byte) AgentSource {
	a.PublicKey = key
	return a
}

// TestOpenSSLSignatureInterop checks the documented alternative to cosign:
// a signature made with `openssl dgst -sha256 -sign` and base64 verifies
// with sigstore's verifier for the same public key.
func TestOpenSSLSignatureInterop(t *testing.T) {
	ossl, err := lookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	dir := t.TempDir()
	key, blob := filepath.Join(dir, "key.pem"), filepath.Join(dir, "agent")
	run := func(args ...string) []byte {
		out, err := exec.Command(ossl, args...).Output()
		if err != nil {
			t.Fatalf("openssl %v: %v", args, err)
		}
		return out
	}
	run("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key)
	if err := os.WriteFile(blob, []byte(testAgentScript), 0o644); err != nil {
		t.Fatal(err)
	}
	sig := run("dgst", "-sha256", "-sign", key, blob)
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(run("ec", "-in", key, "-pubout"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader([]byte(testAgentScript))); err != nil {
		t.Errorf("sigstore rejects an openssl signature: %v", err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader([]byte("other"))); err == nil {
		t.Error("sigstore accepts the signature for other content")
	}
}
