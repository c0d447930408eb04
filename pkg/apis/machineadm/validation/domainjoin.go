package validation

import (
	"regexp"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

var (
	// anyValueRE accepts any non-empty value: a password's shape is
	// SecretShapeProblem's, checked after TrimSecret as the run does.
	anyValueRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^.+$`) })
	// blobRE is the base64 text `djoin /provision` writes (UTF-16 files
	// are converted by the Windows applier, not accepted inline).
	blobRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9+/=\s]+$`) })
	// userRE is "user", "user@REALM" or "DOMAIN\user" without control
	// characters, white space or characters Active Directory refuses in
	// a sAMAccountName ("/[]:;|=,+*?<>).
	userRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([A-Za-z0-9._-]+\\)?[^"/\\\[\]:;|=,+*?<>\s@]+(@[A-Za-z0-9.-]+)?$`)
	})
)

// validateDomainJoin checks spec.host.domainJoin's shape. The rules that
// depend on the operating system (the offline-join blob is Windows-only,
// the linux options Linux-only) are in validateOS.
func validateDomainJoin(r *Result, dj *machineadm.DomainJoin, p *field.Path) {
	if dj.Domain == "" {
		r.Errors = append(r.Errors, field.Required(p.Child("domain"), "the DNS name of the Active Directory domain, such as corp.example.com"))
	} else if msg := dns1123Subdomain(strings.ToLower(dj.Domain)); msg != "" || !strings.Contains(dj.Domain, ".") {
		r.Errors = append(r.Errors, field.Invalid(p.Child("domain"), dj.Domain, "must be the domain's DNS name, such as corp.example.com (not its NetBIOS name)"))
	}
	if ou := dj.OrganizationalUnit; ou != "" {
		if hasControl(ou, false) || !strings.HasPrefix(strings.ToUpper(ou), "OU=") || !strings.Contains(strings.ToUpper(ou), "DC=") {
			r.Errors = append(r.Errors, field.Invalid(p.Child("organizationalUnit"), ou, "must be a distinguished name such as OU=Kubernetes,DC=corp,DC=example,DC=com"))
		}
		if dj.OfflineJoinBlob != nil {
			r.warn(p.Child("organizationalUnit"), "ignored with offlineJoinBlob: the blob's account is placed by `djoin /provision /machineou`")
		}
	}
	if dc := dj.DomainController; dc != "" && (hasControl(dc, true) || strings.ContainsAny(dc, `\/`)) {
		r.Errors = append(r.Errors, field.Invalid(p.Child("domainController"), dc, "must be a host name or IP address"))
	}
	switch {
	case dj.Credentials == nil && dj.OfflineJoinBlob == nil:
		r.Errors = append(r.Errors, field.Required(p, "credentials or offlineJoinBlob"))
	case dj.Credentials != nil && dj.OfflineJoinBlob != nil:
		r.Errors = append(r.Errors, field.Forbidden(p.Child("offlineJoinBlob"), "credentials and offlineJoinBlob are mutually exclusive"))
	}
	if c := dj.Credentials; c != nil {
		cp := p.Child("credentials")
		if c.Username == "" {
			r.Errors = append(r.Errors, field.Required(cp.Child("username"), "a domain account allowed to join computers"))
		} else if !userRE().MatchString(c.Username) {
			r.Errors = append(r.Errors, field.Invalid(cp.Child("username"), c.Username, `must be an account name: user, user@REALM or DOMAIN\user`))
		}
		validateSecret(r, &c.Password, anyValueRE(), "a password", cp.Child("password"))
		if v := c.Password.Value; v != "" && c.Password.File == "" {
			// The value itself is secret: never echoed.
			if msg := SecretShapeProblem(machineadm.SecretFormatPassword, TrimSecret(machineadm.SecretFormatPassword, v)); msg != "" {
				r.Errors = append(r.Errors, field.Invalid(cp.Child("password", "value"), "<redacted>", msg))
			}
		}
	}
	if b := dj.OfflineJoinBlob; b != nil {
		validateSecret(r, b, blobRE(), "the base64 text written by djoin /provision", p.Child("offlineJoinBlob"))
	}
	if l := dj.Linux; l != nil {
		validateAbsFilePath(r, l.Keytab, false, p.Child("linux", "keytab"))
	}
}
