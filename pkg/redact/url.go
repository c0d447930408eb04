package redact

import (
	"net/url"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// URLHasCredentials reports whether raw carries user information; it is
// machineadm.URLHasCredentials (RFC 3986 section 3.2.1; a URL without a
// scheme counts too).
func URLHasCredentials(raw string) bool { return machineadm.URLHasCredentials(raw) }

// URLSecrets returns the forms in which the credentials of raw can appear
// in text, or nil when it carries none: the password as written
// (percent-encoded) and decoded, with '%' doubled as in a systemd unit,
// the whole user information ("user:password"), and the URL itself. The
// last two cover passwords shorter than MinSecretLen where they appear
// with their user name or URL. A user name without a password is taken
// as a credential (a token used as the user name).
func URLSecrets(raw string) []string {
	ui, ok := machineadm.URLUserinfo(raw)
	if !ok {
		return nil
	}
	out := []string{strings.TrimSpace(raw), ui}
	user, pass, hasPass := strings.Cut(ui, ":")
	if !hasPass {
		pass = user
	}
	out = append(out, pass)
	if dec, err := url.PathUnescape(pass); err == nil && dec != pass {
		out = append(out, dec)
	}
	if strings.Contains(pass, "%") {
		out = append(out, strings.ReplaceAll(pass, "%", "%%"))
	}
	return out
}
