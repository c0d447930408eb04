package main

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// loadSigner reads an unencrypted PEM private key (PKCS #8, SEC 1 "EC
// PRIVATE KEY" or PKCS #1 "RSA PRIVATE KEY") and returns a sigstore
// signer-verifier hashing with SHA-256: ECDSA (ASN.1 DER signatures) or RSA
// PKCS #1 v1.5 — the two kinds `openssl dgst -sha256 -verify` checks and
// the render stubs accept. Ed25519 and other keys are refused.
func loadSigner(path string) (signature.SignerVerifier, error) {
	pemBytes, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, cryptoutils.SkipPassword)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: not an unencrypted PEM private key: %w", path, err)
	}
	switch priv.(type) {
	case *ecdsa.PrivateKey, *rsa.PrivateKey:
	default:
		return nil, fmt.Errorf("signing key %s: %T is not supported: the stubs verify with `openssl dgst -sha256 -verify`, so use ECDSA (P-256) or RSA", path, priv)
	}
	sv, err := signature.LoadSignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return sv, nil
}

// Sign returns the detached signature of message in the release format:
// base64 (RFC 4648 standard alphabet, no line breaks, no trailing newline)
// of the signer's ASN.1 DER ECDSA or PKCS #1 v1.5 RSA signature over the
// SHA-256 digest of message — what `cosign sign-blob` writes and what the
// stubs of `machineadm render --agent-signature-url` decode with
// `base64 -d` before `openssl dgst -sha256 -verify`.
func Sign(s signature.Signer, message []byte) ([]byte, error) {
	raw, err := s.SignMessage(bytes.NewReader(message))
	if err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(len(raw)))
	base64.StdEncoding.Encode(out, raw)
	return out, nil
}

// Verify checks a signature in the release format (see Sign) over message
// with v. White space around the base64 text is ignored.
func Verify(v signature.Verifier, sig, message []byte) error {
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(sig)))
	if err != nil {
		return fmt.Errorf("signature is not base64: %w", err)
	}
	return v.VerifySignature(bytes.NewReader(raw), bytes.NewReader(message))
}

// signAll writes NAME.sig for every name in dist, and checks each new
// signature with the key's public half before it counts.
func signAll(sv signature.SignerVerifier, dist string, names []string) error {
	for _, n := range names {
		p := filepath.Join(dist, n)
		msg, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sig, err := Sign(sv, msg)
		if err != nil {
			return fmt.Errorf("sign %s: %w", n, err)
		}
		if err := Verify(sv, sig, msg); err != nil {
			return fmt.Errorf("sign %s: the new signature does not verify: %w", n, err)
		}
		if err := os.WriteFile(p+SigSuffix, sig, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writePublicKey writes the signer's public key as PKIX PEM.
func writePublicKey(sv signature.SignerVerifier, path string) error {
	pub, err := sv.PublicKey()
	if err != nil {
		return err
	}
	b, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
