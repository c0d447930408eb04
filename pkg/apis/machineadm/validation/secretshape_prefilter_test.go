package validation

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// unfiltered is secretInText without its prefilters: every pattern run on
// every text.
func unfiltered(content []byte, depth int, assignments bool) string {
	if m := privateKeyBlock().FindSubmatch(content); m != nil {
		if strings.HasPrefix(string(m[1]), "PGP ") {
			return "PGP private key"
		}
		return "PEM private key"
	}
	switch {
	case puttyKey().Match(content):
		return "PuTTY private key"
	case bootstrapTokenText().Match(content):
		return "bootstrap token"
	case jwtText().Match(content):
		return "JSON Web Token"
	case apiKeyText().Match(content):
		return "API key"
	}
	for _, m := range credentialAssignment().FindAllSubmatch(content, -1) {
		if !assignments {
			break
		}
		kind := credentialKinds[credentialKey(string(m[1]))]
		v := strings.Trim(string(m[2]), `"'`)
		if len(v) >= kind.min && !placeholder(v) {
			return kind.what
		}
	}
	if depth == 0 {
		return ""
	}
	for _, run := range base64Run().FindAll(content, -1) {
		if dec := decodeBase64(string(run)); dec != nil {
			if what := unfiltered(dec, depth-1, assignments); what != "" {
				return "base64-encoded " + what
			}
		}
	}
	return ""
}

// The prefilters change what secretInText finds in nothing: on texts
// built from pieces of every pattern (and those base64-encoded), with and
// without assignments, it answers as the patterns alone do.
func TestSecretInTextPrefiltersChangeNothing(t *testing.T) {
	pieces := []string{
		"-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN PGP PRIVATE KEY BLOCK-----", "PRIVATE KEY", "PuTTY-User-Key-File-3: ",
		"abcdef.0123456789abcdef", "abcdef.", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXBhcnQ",
		"AIza" + strings.Repeat("x", 35), "ghp_" + strings.Repeat("A", 36), "github_pat_" + strings.Repeat("B", 40), "glpat-" + strings.Repeat("z", 20), "xoxb-1234567890",
		"password: hunter2hunter2", "token = \"s3cr3t-value-long\"", "auth:", "client_secret=abc", "user: x", "/auth:authorize",
		"plain text", " ", "\n", ":", "=", ".", "gh", "github_pat_", "xox", "eyJ", strings.Repeat("Q", 45),
	}
	rnd := rand.New(rand.NewPCG(7, 8))
	for i := range 3000 {
		var b strings.Builder
		for range 1 + rnd.IntN(4) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
			if rnd.IntN(2) == 0 {
				b.WriteByte(" \n.:=x"[rnd.IntN(6)])
			}
		}
		text := b.String()
		if i%3 == 0 {
			text = "data " + base64.StdEncoding.EncodeToString([]byte(text))
		}
		for _, assignments := range []bool{true, false} {
			if got, want := secretInText([]byte(text), 2, assignments), unfiltered([]byte(text), 2, assignments); got != want {
				t.Fatalf("%q (assignments %v): %q, the patterns alone find %q", text, assignments, got, want)
			}
		}
	}
}

// A fine-grained GitHub token alone in a text (no "gh" anywhere: the
// word is "github") is found, raw and base64-encoded.
func TestSecretInTextFindsAGitHubFineGrainedToken(t *testing.T) {
	tok := "github_pat_" + strings.Repeat("A1b2", 20)
	for _, text := range []string{"GIT_TOKEN " + tok, "x " + base64.StdEncoding.EncodeToString([]byte(tok))} {
		if got := SecretInText([]byte(text)); !strings.Contains(got, "API key") {
			t.Errorf("%.20q...: %q, want an API key", text, got)
		}
	}
}

// Every apiKeys expression starts with its literal, so the prefilter
// passes whatever it matches.
func TestAPIKeyLiteralsStartTheirExpressions(t *testing.T) {
	for _, k := range apiKeys {
		if !strings.HasPrefix(k.expr, k.literal) || strings.ContainsAny(k.literal, `\[](){}.*+?|^$`) {
			t.Errorf("%q does not start with the plain text %q", k.expr, k.literal)
		}
	}
}
