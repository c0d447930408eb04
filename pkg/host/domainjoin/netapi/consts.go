package netapi

// Options of NetJoinDomain (lmjoin.h NETSETUP_*).
const (
	// JoinDomain joins a domain, not a workgroup (NETSETUP_JOIN_DOMAIN).
	JoinDomain = 0x00000001
	// AcctCreate creates the computer account, or reuses one of the same
	// name (NETSETUP_ACCT_CREATE).
	AcctCreate = 0x00000002
	// DomainJoinIfJoined allows a join while joined to another domain
	// (NETSETUP_DOMAIN_JOIN_IF_JOINED); machineadm never sets it.
	DomainJoinIfJoined = 0x00000020
)

// Options of NetRequestOfflineDomainJoin (lmjoin.h NETSETUP_PROVISION_*).
const (
	// ProvisionOnlineCaller says the running Windows is the one joined
	// (NETSETUP_PROVISION_ONLINE_CALLER), as `djoin /requestODJ /localos`.
	ProvisionOnlineCaller = 0x40000000
)

// NET_API_STATUS values machineadm tells apart (lmerr.h, winerror.h).
const (
	// ErrorLogonFailure: wrong user name or password.
	ErrorLogonFailure = 1326
	// ErrorNoSuchDomain: no domain controller could be found.
	ErrorNoSuchDomain = 1355
	// ErrorAccessDenied: the account may not create computer accounts.
	ErrorAccessDenied = 5
	// NerrSetupAlreadyJoined: the computer is already in a domain.
	NerrSetupAlreadyJoined = 2691
)
