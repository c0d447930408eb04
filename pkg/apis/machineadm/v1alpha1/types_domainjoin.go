package v1alpha1

// DomainJoin joins this machine to an Active Directory domain before the
// node joins its cluster (spec.host.domainJoin). Exactly one of
// Credentials and OfflineJoinBlob is set. machineadm never manages group
// membership: put the computer account in groups on the domain side.
//
// On Windows the join uses NetJoinDomain (Credentials) or
// NetRequestOfflineDomainJoin (OfflineJoinBlob, preferred: no domain
// credentials reach the node) and needs a reboot, after which the
// first-boot script runs bootstrap again. On Linux it runs `adcli join`
// and keeps the host's Kerberos keytab; OfflineJoinBlob is Windows-only.
// A machine already joined to Domain is left unchanged.
type DomainJoin struct {
	// Domain is the DNS name of the Active Directory domain, for example
	// "corp.example.com". Required.
	Domain string `json:"domain"`
	// OrganizationalUnit is the distinguished name of the OU the computer
	// account is created in, for example
	// "OU=Kubernetes,DC=corp,DC=example,DC=com". Default: the domain's
	// default computers container. Ignored with OfflineJoinBlob (the blob
	// names its account).
	OrganizationalUnit string `json:"organizationalUnit,omitempty"`
	// DomainController is the host name or IP address of the domain
	// controller to use. Default: located through DNS SRV records of
	// Domain. adcli: --domain-controller; Windows: "DOMAIN\DC" in
	// NetJoinDomain's lpDomain.
	DomainController string `json:"domainController,omitempty"`
	// Credentials are a domain account allowed to create (or reuse) the
	// computer account. Secret (the password).
	Credentials *DomainCredentials `json:"credentials,omitempty"`
	// OfflineJoinBlob is the base64 text `djoin /provision /savefile`
	// writes, for NetRequestOfflineDomainJoin. Windows only. Secret.
	OfflineJoinBlob *SecretSource `json:"offlineJoinBlob,omitempty" secret:"offline-join-blob"`
	// Linux holds options of the Linux join (adcli).
	Linux *LinuxDomainJoin `json:"linux,omitempty"`
}

// DomainCredentials are a domain account and its password.
type DomainCredentials struct {
	// Username is the account name, "user" or "user@REALM" (Linux) or
	// "DOMAIN\user" (Windows, "user" is qualified with Domain). Required.
	Username string `json:"username"`
	// Password is the account's password: one line of UTF-8 text without
	// control, format or line-separator characters (a line break, tab, NUL,
	// byte-order mark, zero-width mark or U+2028 is refused, inline with
	// exit 2 and from a file when the run reads it, since adcli reads one
	// line and NetJoinDomain a NUL-terminated string). Only ASCII spaces,
	// tabs and line ends around it are dropped. Secret; on Linux it
	// reaches adcli on standard input only. Required.
	Password SecretSource `json:"password" secret:"password"`
}

// LinuxDomainJoin holds options of the Linux domain join.
type LinuxDomainJoin struct {
	// Keytab is the host keytab adcli writes, mode 0600. Default
	// "/etc/krb5.keytab". adcli: --host-keytab.
	Keytab string `json:"keytab,omitempty"`
	// WriteKrb5Conf writes /etc/krb5.conf with the domain's realm as
	// default_realm (the file is replaced). Default false.
	WriteKrb5Conf bool `json:"writeKrb5Conf,omitempty"`
	// WriteSSSDConf writes /etc/sssd/sssd.conf (mode 0600) for an "ad"
	// provider domain using the keytab. Default false.
	WriteSSSDConf bool `json:"writeSSSDConf,omitempty"`
}
