// Package domainjoin joins a machine to an Active Directory domain from
// spec.host.domainJoin, as the host step "domain-join".
//
// The package has a pure part and thin appliers. The pure part (Plan,
// Decide, the krb5.conf and sssd.conf renderers, the adcli argument
// lists, the offline-join blob decoder, the reboot bookkeeping) is tested
// on Linux. The appliers implement Joiner: Adcli runs Debian's adcli on
// Linux (the password goes to its standard input, never its command
// line), and the Windows joiner calls NetGetJoinInformation,
// NetJoinDomain and NetRequestOfflineDomainJoin (package netapi). Tests
// use a fake Joiner.
//
// The step is idempotent: a machine already joined to the domain (adcli
// testjoin succeeds; NetGetJoinInformation names the domain) is left
// Unchanged. machineadm never leaves a domain and never manages group
// membership.
package domainjoin

import (
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// StepName is the name of the host step and its phase.
const StepName = "domain-join"

// Method is how the machine joins.
type Method string

const (
	// MethodCredentials joins with a domain account and password
	// (adcli join, NetJoinDomain).
	MethodCredentials Method = "Credentials"
	// MethodOfflineBlob joins with an offline-join blob from
	// `djoin /provision` (NetRequestOfflineDomainJoin). Windows only.
	MethodOfflineBlob Method = "OfflineJoinBlob"
)

// Plan is the join machineadm will perform, computed from the spec alone.
type Plan struct {
	// Domain is the domain's DNS name, lower-case ("corp.example.com").
	Domain string
	// Realm is the Kerberos realm: Domain upper-cased.
	Realm string
	// OU is the distinguished name of the computer account's OU, or "".
	OU string
	// DomainController is the DC to use, or "" to locate one through DNS.
	DomainController string
	// Method is Credentials or OfflineJoinBlob.
	Method Method
	// Username is the joining account (Credentials only).
	Username string
	// Keytab is the Linux host keytab path (on the host, not root-joined).
	Keytab string
	// Krb5Conf and SSSDConf say whether to write /etc/krb5.conf and
	// /etc/sssd/sssd.conf (Linux).
	Krb5Conf, SSSDConf bool
}

// NewPlan computes the plan of a validated spec.host.domainJoin.
func NewPlan(dj *machineadm.DomainJoin) *Plan {
	p := &Plan{
		Domain:           strings.ToLower(strings.TrimSuffix(dj.Domain, ".")),
		OU:               dj.OrganizationalUnit,
		DomainController: dj.DomainController,
		Method:           MethodOfflineBlob,
	}
	p.Realm = strings.ToUpper(p.Domain)
	if dj.Credentials != nil {
		p.Method = MethodCredentials
		p.Username = dj.Credentials.Username
	}
	if l := dj.Linux; l != nil {
		p.Keytab, p.Krb5Conf, p.SSSDConf = l.Keytab, l.WriteKrb5Conf, l.WriteSSSDConf
	}
	return p
}

// NetBIOSGuess is the first label of the domain, upper-cased: the NetBIOS
// name most domains have ("CORP" for corp.example.com).
// NetGetJoinInformation reports the NetBIOS name.
func (p *Plan) NetBIOSGuess() string {
	first, _, _ := strings.Cut(p.Domain, ".")
	return strings.ToUpper(first)
}

// Membership is what the host is joined to now.
type Membership struct {
	// Joined says the host is a member of some domain.
	Joined bool
	// Names are the names the host reports for its domain (DNS name,
	// NetBIOS name); empty when not joined.
	Names []string
	// RebootPending says that a join was made and Windows has not
	// rebooted since (the join takes effect at the next boot).
	RebootPending bool
	// Detail is the check's own words for the report, for example
	// adcli testjoin's "Successfully validated join to domain CORP.EXAMPLE.COM".
	Detail string
}

// Action is what the step must do, from Decide.
type Action int

const (
	// ActionNone: joined to the domain already; nothing to do.
	ActionNone Action = iota
	// ActionJoin: not joined; join now.
	ActionJoin
	// ActionAwaitReboot: joined, but the join takes effect only after a
	// reboot that has not happened yet.
	ActionAwaitReboot
)

func (a Action) String() string {
	return [...]string{"None", "Join", "AwaitReboot"}[a]
}

// ErrOtherDomain is returned by Decide when the host is a member of a
// different domain: machineadm never leaves a domain.
var ErrOtherDomain = fmt.Errorf("member of another domain")

// Decide chooses the action for plan p given the host's membership m. A
// host joined to another domain is an error wrapping ErrOtherDomain.
func Decide(p *Plan, m Membership) (Action, error) {
	if !m.Joined {
		return ActionJoin, nil
	}
	for _, n := range m.Names {
		n = strings.TrimSuffix(n, ".")
		if strings.EqualFold(n, p.Domain) || strings.EqualFold(n, p.NetBIOSGuess()) {
			if m.RebootPending {
				return ActionAwaitReboot, nil
			}
			return ActionNone, nil
		}
	}
	return ActionJoin, fmt.Errorf("spec.host.domainJoin.domain is %s, but this machine is a %w (%s); leave it by hand first", p.Domain, ErrOtherDomain, strings.Join(m.Names, ", "))
}
