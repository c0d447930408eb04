package v1alpha1

// DomainJoin joins a Machine to an Active Directory domain before it
// joins its cluster (machine spec DomainJoin, spec.host.domainJoin): on
// Linux with adcli and Credentials, on Windows with NetJoinDomain and
// Credentials or, preferred there, an offline join blob (no domain
// credentials reach the node). Exactly one of Credentials and
// OfflineJoinBlobFrom is set. The password and the blob come from Secrets
// in the config's namespace; the controller seals them to the config's
// recipients like every other secret value. machineadm never manages
// group membership.
// +kubebuilder:validation:XValidation:rule="has(self.credentials) != has(self.offlineJoinBlobFrom)",message="set exactly one of credentials and offlineJoinBlobFrom"
type DomainJoin struct {
	// Domain is the DNS name of the domain, for example
	// "corp.example.com". Required.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$`
	Domain string `json:"domain"`
	// OrganizationalUnit is the distinguished name of the OU the computer
	// account is created in. Default: the domain's computers container.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]*$`
	OrganizationalUnit string `json:"organizationalUnit,omitempty"`
	// DomainController is the host name or IP address of the domain
	// controller. Default: located through the domain's DNS SRV records.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([A-Za-z0-9.:-]*[A-Za-z0-9])?$`
	DomainController string `json:"domainController,omitempty"`
	// Credentials are a domain account allowed to create (or reuse) the
	// computer account; its password comes from a Secret.
	// +optional
	Credentials *DomainCredentials `json:"credentials,omitempty"`
	// OfflineJoinBlobFrom is a key of a Secret holding the base64 text
	// `djoin /provision /savefile` writes (machine spec field
	// offlineJoinBlob, sealed). os windows only.
	// +optional
	OfflineJoinBlobFrom *SecretValueSource `json:"offlineJoinBlobFrom,omitempty"`
	// Linux holds options of the Linux join (adcli). os linux only.
	// +optional
	Linux *LinuxDomainJoin `json:"linux,omitempty"`
}

// DomainCredentials are a domain account and where its password comes
// from.
type DomainCredentials struct {
	// Username is the account name: "user" or "user@REALM" (Linux),
	// "DOMAIN\user" or "user" (Windows). Required.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]+$`
	Username string `json:"username"`
	// PasswordFrom is a key of a Secret holding the account's password
	// (machine spec field password, sealed; on Linux it reaches adcli on
	// standard input only).
	PasswordFrom SecretValueSource `json:"passwordFrom"`
}

// SecretValueSource is a secret value taken from a Secret.
type SecretValueSource struct {
	// Secret is a key of a Secret in the config's namespace.
	Secret SecretKeyReference `json:"secret"`
}

// LinuxDomainJoin holds options of the Linux domain join (machine spec
// LinuxDomainJoin).
type LinuxDomainJoin struct {
	// Keytab is the host keytab adcli writes, mode 0600. Default
	// "/etc/krb5.keytab".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*[^/]$`
	Keytab string `json:"keytab,omitempty"`
	// WriteKrb5Conf writes /etc/krb5.conf with the domain's realm as
	// default_realm. Default false.
	// +optional
	WriteKrb5Conf bool `json:"writeKrb5Conf,omitempty"`
	// WriteSSSDConf writes /etc/sssd/sssd.conf for an "ad" provider
	// domain using the keytab. Default false.
	// +optional
	WriteSSSDConf bool `json:"writeSSSDConf,omitempty"`
}
