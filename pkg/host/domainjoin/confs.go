package domainjoin

import (
	"fmt"
	"strings"
)

// Paths of the Kerberos and SSSD configuration files the Linux join
// writes when spec.host.domainJoin.linux asks for them.
const (
	Krb5ConfPath = "/etc/krb5.conf"
	SSSDConfPath = "/etc/sssd/sssd.conf"
)

// Krb5Conf renders /etc/krb5.conf (MIT Kerberos krb5.conf(5)) for the
// plan's realm: default_realm, DNS lookup of KDCs (or the plan's domain
// controller as KDC and admin server), and the domain-to-realm mapping.
func Krb5Conf(p *Plan) []byte {
	var b strings.Builder
	b.WriteString("# Written by machineadm (spec.host.domainJoin.linux.writeKrb5Conf).\n")
	fmt.Fprintf(&b, "[libdefaults]\n\tdefault_realm = %s\n\tdns_lookup_realm = false\n\tdns_lookup_kdc = %t\n\trdns = false\n\tdefault_keytab_name = FILE:%s\n",
		p.Realm, p.DomainController == "", p.Keytab)
	if p.DomainController != "" {
		fmt.Fprintf(&b, "\n[realms]\n\t%s = {\n\t\tkdc = %s\n\t\tadmin_server = %s\n\t}\n", p.Realm, p.DomainController, p.DomainController)
	}
	fmt.Fprintf(&b, "\n[domain_realm]\n\t.%s = %s\n\t%s = %s\n", p.Domain, p.Realm, p.Domain, p.Realm)
	return []byte(b.String())
}

// SSSDConf renders /etc/sssd/sssd.conf (sssd.conf(5), sssd-ad(5)) with
// one "ad" provider domain that authenticates with the host keytab. sssd
// refuses a configuration file that is not mode 0600.
func SSSDConf(p *Plan) []byte {
	var b strings.Builder
	b.WriteString("# Written by machineadm (spec.host.domainJoin.linux.writeSSSDConf).\n")
	fmt.Fprintf(&b, "[sssd]\ndomains = %s\nconfig_file_version = 2\nservices = nss, pam\n\n", p.Domain)
	fmt.Fprintf(&b, "[domain/%s]\nid_provider = ad\naccess_provider = ad\nad_domain = %s\nkrb5_realm = %s\nkrb5_keytab = %s\nldap_krb5_keytab = %s\n",
		p.Domain, p.Domain, p.Realm, p.Keytab, p.Keytab)
	if p.DomainController != "" {
		fmt.Fprintf(&b, "ad_server = %s\n", p.DomainController)
	}
	b.WriteString("cache_credentials = true\nuse_fully_qualified_names = true\n")
	return []byte(b.String())
}
