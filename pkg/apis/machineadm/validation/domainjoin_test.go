//go:build !windows

package validation

import (
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestValidateDomainJoin covers spec.host.domainJoin on a Linux build.
func TestValidateDomainJoin(t *testing.T) {
	const p = "spec.host.domainJoin."
	dj := func(fn func(d *machineadm.DomainJoin)) func(c *spec) {
		return func(c *spec) {
			d := &machineadm.DomainJoin{
				Domain: "corp.example.com",
				Credentials: &machineadm.DomainCredentials{
					Username: "joiner",
					Password: machineadm.SecretSource{File: "/etc/machineadm/secrets/ad-password"},
				},
				Linux: &machineadm.LinuxDomainJoin{Keytab: "/etc/krb5.keytab"},
			}
			fn(d)
			c.Spec.Host.DomainJoin = d
		}
	}
	runCases(t, []vcase{
		{name: "valid", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.OrganizationalUnit, d.DomainController = "OU=Kubernetes,DC=corp,DC=example,DC=com", "10.0.0.2"
		})},
		{name: "domain missing", base: worker, mutate: dj(func(d *machineadm.DomainJoin) { d.Domain = "" }), want: []fe{{p + "domain", req}}},
		{name: "NetBIOS name", base: worker, mutate: dj(func(d *machineadm.DomainJoin) { d.Domain = "CORP" }), want: []fe{{p + "domain", inv}}},
		{name: "OU not a DN", base: worker, mutate: dj(func(d *machineadm.DomainJoin) { d.OrganizationalUnit = "Kubernetes" }), want: []fe{{p + "organizationalUnit", inv}}},
		{name: "no credentials", base: worker, mutate: dj(func(d *machineadm.DomainJoin) { d.Credentials = nil }), want: []fe{{"spec.host.domainJoin", req}}},
		{name: "both credentials and blob", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.OfflineJoinBlob = &machineadm.SecretSource{File: "/etc/machineadm/secrets/djoin"}
		}), want: []fe{{p + "offlineJoinBlob", forb}, {p + "offlineJoinBlob", forb}}},
		{name: "offline blob is Windows-only", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials, d.OfflineJoinBlob = nil, &machineadm.SecretSource{File: "/etc/machineadm/secrets/djoin"}
		}), want: []fe{{p + "offlineJoinBlob", forb}}},
		{name: "bad username", base: worker, mutate: dj(func(d *machineadm.DomainJoin) { d.Credentials.Username = "a b" }), want: []fe{{p + "credentials.username", inv}}},
		{name: "qualified usernames", base: worker, mutate: dj(func(d *machineadm.DomainJoin) { d.Credentials.Username = "joiner@CORP.EXAMPLE.COM" })},
		{name: "password missing", base: worker, mutate: dj(func(d *machineadm.DomainJoin) { d.Credentials.Password = machineadm.SecretSource{} }), want: []fe{{p + "credentials.password", req}}},
		{name: "inline password warns, never echoed", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials.Password = machineadm.SecretSource{Value: "Sup3r-Secret!"}
		}), warn: []string{p + "credentials.password.value"}, secret: "Sup3r-Secret!"},
		{name: "inline password from a block scalar keeps its line end", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials.Password = machineadm.SecretSource{Value: "Sup3r Secret!\n"}
		}), warn: []string{p + "credentials.password.value"}, secret: "Sup3r Secret!"},
		// adcli reads a line, NetJoinDomain a NUL-terminated string: the
		// join would use another password than the one given.
		{name: "password with a line break", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials.Password = machineadm.SecretSource{Value: "first\nsecond"}
		}), want: []fe{{p + "credentials.password.value", inv}}, secret: "second"},
		{name: "password with a NUL", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials.Password = machineadm.SecretSource{Value: "first\x00second"}
		}), want: []fe{{p + "credentials.password.value", inv}}, secret: "second"},
		{name: "password with a C1 control", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials.Password = machineadm.SecretSource{Value: "first\u0085second"}
		}), want: []fe{{p + "credentials.password.value", inv}}, secret: "second"},
		// What the run would drop or cut at: a Unicode line separator
		// (YAML 1.1 folds it), a byte-order mark, a zero-width space,
		// a trailing no-break space the run used to trim.
		{name: "password with a line separator", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials.Password = machineadm.SecretSource{Value: "first\u2028second"}
		}), want: []fe{{p + "credentials.password.value", inv}}, secret: "second"},
		{name: "password with a byte-order mark", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials.Password = machineadm.SecretSource{Value: "\ufeffsecond"}
		}), want: []fe{{p + "credentials.password.value", inv}}, secret: "second"},
		{name: "password with a zero-width space", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials.Password = machineadm.SecretSource{Value: "first\u200bsecond"}
		}), want: []fe{{p + "credentials.password.value", inv}}, secret: "second"},
		{name: "password of white space only", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials.Password = machineadm.SecretSource{Value: " \n"}
		}), want: []fe{{p + "credentials.password.value", inv}}},
		{name: "password with a no-break space is kept", base: worker, mutate: dj(func(d *machineadm.DomainJoin) {
			d.Credentials.Password = machineadm.SecretSource{Value: "Sup3r\u00a0Secret!\u00a0\n"}
		}), warn: []string{p + "credentials.password.value"}, secret: "Sup3r"},
		{name: "relative keytab", base: worker, mutate: dj(func(d *machineadm.DomainJoin) { d.Linux.Keytab = "krb5.keytab" }), want: []fe{{p + "linux.keytab", inv}}},
		{name: "keytab the root directory", base: worker, mutate: dj(func(d *machineadm.DomainJoin) { d.Linux.Keytab = "/" }), want: []fe{{p + "linux.keytab", inv}}},
		{name: "domain controller with a path", base: worker, mutate: dj(func(d *machineadm.DomainJoin) { d.DomainController = `CORP\dc1` }), want: []fe{{p + "domainController", inv}}},
	})
}
