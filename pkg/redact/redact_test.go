package redact

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
)

// secrets of one test run: a bootstrap token, a certificate key and a CA
// private key, all made fresh so no test passes by luck.
type testSecrets struct {
	token, tokenSecret, certKey, caKey string
}

func newTestSecrets(t testing.TB) testSecrets {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caKey := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	const alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	const hexd = "0123456789abcdef"
	pick := func(set string, n int) string {
		b := make([]byte, n)
		rand.Read(b)
		for i := range b {
			b[i] = set[int(b[i])%len(set)]
		}
		return string(b)
	}
	secret := pick(alnum, 16)
	return testSecrets{token: pick(alnum, 6) + "." + secret, tokenSecret: secret, certKey: pick(hexd, 64), caKey: caKey}
}

// forbidden lists every string that must never appear in redacted output.
func (s testSecrets) forbidden() []string {
	b64 := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }
	out := []string{s.token, s.tokenSecret, s.certKey, b64(s.caKey), b64(s.token), b64(s.tokenSecret), b64(s.certKey)}
	for _, line := range strings.Split(s.caKey, "\n") {
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}

func assertClean(t *testing.T, what, text string, forbidden []string) {
	t.Helper()
	for _, f := range forbidden {
		if strings.Contains(text, f) {
			t.Errorf("%s leaks %q:\n%s", what, f, text)
		}
	}
}

// leakyText mentions the secrets the ways kubeadm, kubeconfigs, JSON and
// YAML do.
func leakyText(s testSecrets) string {
	return strings.Join([]string{
		"[bootstrap-token] Using token: " + s.token,
		"kubeadm join 10.0.0.1:6443 --token " + s.token + " --discovery-token-ca-cert-hash sha256:" + strings.Repeat("ab", 32),
		"kubeadm join --token=" + s.token + " --certificate-key " + s.certKey,
		"[upload-certs] Using certificate key:",
		s.certKey,
		`{"certificateKey": "` + s.certKey + `", "token": "` + s.token + `"}`,
		"secret half alone: " + s.tokenSecret,
		"key file follows:",
		strings.TrimRight(s.caKey, "\n"),
		"after the key",
		`{"key": "` + strings.ReplaceAll(s.caKey, "\n", `\n`) + `", "next": 1}`,
		"    client-key-data: " + base64.StdEncoding.EncodeToString([]byte(s.caKey)),
		// kubeadm's dry run prints the bootstrap-token Secret it would create.
		"  token-id: " + base64.StdEncoding.EncodeToString([]byte(s.token[:6])),
		"  token-secret: " + base64.StdEncoding.EncodeToString([]byte(s.tokenSecret)),
	}, "\n")
}

func TestKnownSecretsAndPatterns(t *testing.T) {
	s := newTestSecrets(t)
	text := leakyText(s)
	t.Run("known", func(t *testing.T) {
		r := New(s.token, s.certKey, s.caKey)
		assertClean(t, "String", r.String(text), s.forbidden())
	})
	t.Run("patterns only", func(t *testing.T) {
		// Nothing registered: the patterns alone must catch every form.
		r := New()
		got := r.String(text)
		assertClean(t, "String", got, []string{s.token, s.certKey})
		for _, line := range strings.Split(s.caKey, "\n") {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") && strings.Contains(got, line) {
				t.Errorf("PEM body line leaks:\n%s", got)
			}
		}
	})
}

func TestPatternCases(t *testing.T) {
	r := New()
	hash := "sha256:" + strings.Repeat("0f", 32)
	hex := strings.Repeat("c0", 32)
	for _, tc := range []struct{ in, want string }{
		{"Using token: abcdef.0123456789abcdef", "Using token: <redacted>"},
		{"--token abcdef.0123456789abcdef", "--token <redacted>"},
		{"--token=not-a-token-shape", "--token=<redacted>"},
		{"--tls-bootstrap-token x1234567", "--tls-bootstrap-token <redacted>"},
		{"--certificate-key " + hex, "--certificate-key <redacted>"},
		{"certificate key: " + hex, "certificate key: <redacted>"},
		{`"certificateKey":"` + hex + `"`, `"certificateKey":"<redacted>"`},
		{`token: "0123456789abcdefXYZ"`, `token: "<redacted>"`},
		// Not secret: the CA cert hash, token IDs, other flags, plain hex.
		{"--discovery-token-ca-cert-hash " + hash, "--discovery-token-ca-cert-hash " + hash},
		{`token id "abcdef" is invalid for this cluster`, `token id "abcdef" is invalid for this cluster`},
		{"--token-ttl 24h0m0s", "--token-ttl 24h0m0s"},
		{"digest " + hex, "digest " + hex},
		{"-----BEGIN CERTIFICATE-----", "-----BEGIN CERTIFICATE-----"},
		{"a: -----BEGIN PRIVATE KEY-----\\nMIIB\\n-----END PRIVATE KEY----- tail", "a: <redacted> tail"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
		// Idempotent: redacting again changes nothing.
		if got := r.String(tc.want); got != tc.want {
			t.Errorf("String(%q) again = %q", tc.want, got)
		}
	}
}

func TestStreamCertificateKeyOnNextLine(t *testing.T) {
	hex := strings.Repeat("9a", 32)
	got := New().String("[upload-certs] Using certificate key:\n" + hex + "\n" + hex)
	want := "[upload-certs] Using certificate key:\n<redacted>\n" + hex
	if got != want {
		t.Errorf("got %q, want %q (only the line after the label is secret)", got, want)
	}
}

func TestAddIgnoresShortAndBlank(t *testing.T) {
	r := New("", "  ", "short")
	if got := r.String("short words stay"); got != "short words stay" {
		t.Errorf("short secret was redacted: %q", got)
	}
	r.Add("  longsecret1  \n")
	if got := r.String("x longsecret1 y"); got != "x <redacted> y" {
		t.Errorf("trimmed secret not redacted: %q", got)
	}
}

func TestLongestSecretFirst(t *testing.T) {
	r := New("secretpart", "secretpart-and-more")
	if got := r.String("v=secretpart-and-more"); got != "v=<redacted>" {
		t.Errorf("got %q", got)
	}
}

func TestNilRedactor(t *testing.T) {
	var r *Redactor
	if got := r.String("abc"); got != "abc" {
		t.Errorf("nil redactor changed text: %q", got)
	}
}
