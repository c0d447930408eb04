package redact

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestEveryPartInEveryEncoding: kubeadm's dry run prints the
// bootstrap-token Secret with token-secret base64-encoded; neither it nor
// any other part of a registered secret survives in any base64 form.
func TestEveryPartInEveryEncoding(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	const secretHalf = "0123456789abcdef"
	r := New(token)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		for _, part := range []string{token, secretHalf} {
			line := "  data: " + enc.EncodeToString([]byte(part))
			if got := r.String(line); strings.Contains(got, enc.EncodeToString([]byte(part))) {
				t.Errorf("%q survives as %q", part, got)
			}
		}
	}
	// What kubeadm v1.37 prints for the Secret in a dry run.
	secret := "data:\n  token-id: " + base64.StdEncoding.EncodeToString([]byte("abcdef")) +
		"\n  token-secret: " + base64.StdEncoding.EncodeToString([]byte(secretHalf)) + "\n"
	if got := r.String(secret); strings.Contains(got, base64.StdEncoding.EncodeToString([]byte(secretHalf))) {
		t.Errorf("dry-run Secret leaks the token's secret half:\n%s", got)
	}
	// A token the redactor was never told about: the field itself is
	// recognised.
	other := "  token-secret: " + base64.StdEncoding.EncodeToString([]byte("zyxwvu9876543210"))
	if got := New().String(other); got != "  token-secret: "+Placeholder {
		t.Errorf("unknown token-secret field: %q", got)
	}
}
