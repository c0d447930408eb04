package validation

import (
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// SecretShapeProblem accepts what kubeadm accepts (a certificate key in
// either case of hex), names the shape otherwise and never quotes the
// value.
func TestSecretShapeProblem(t *testing.T) {
	key := strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		format, v string
		ok        bool
	}{
		{machineadm.SecretFormatBootstrapToken, "abcdef.0123456789abcdef", true},
		{machineadm.SecretFormatBootstrapToken, "SECRET.0123456789abcdef", false},
		{machineadm.SecretFormatBootstrapToken, "abcdef.0123456789abcdef\n", false},
		{machineadm.SecretFormatCertificateKey, key, true},
		{machineadm.SecretFormatCertificateKey, strings.ToUpper(key), true},
		{machineadm.SecretFormatCertificateKey, key[:62], false},
		{machineadm.SecretFormatCertificateKey, "SECRET" + key[6:], false},
		{machineadm.SecretFormatPassword, "SECRET anything", true},
	} {
		p := SecretShapeProblem(tc.format, tc.v)
		if (p == "") != tc.ok || strings.Contains(p, "SECRET") {
			t.Errorf("SecretShapeProblem(%s, %q) = %q, want ok %v", tc.format, tc.v, p, tc.ok)
		}
	}
}
