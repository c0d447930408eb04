package domainjoin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"

	"github.com/machineadm/machineadm/pkg/atomicfile"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/domainjoin/netapi"
)

// NetSetupDomainName is NetGetJoinInformation's status of a domain
// member (lmjoin.h NETSETUP_JOIN_STATUS).
const NetSetupDomainName = 3

// NetAPI is the part of the Windows API the Windows joiner uses. The
// real one (netapi_windows.go) calls netapi32 and kernel32; tests use a
// fake.
type NetAPI interface {
	// JoinInformation is NetGetJoinInformation: the domain's NetBIOS
	// name (or workgroup) and the NETSETUP_JOIN_STATUS.
	JoinInformation() (name string, status uint32, err error)
	// DNSDomain is GetComputerNameEx(ComputerNameDnsDomain), "" if none.
	DNSDomain() string
	// JoinDomain is NetJoinDomain on the local machine.
	JoinDomain(domain, ou, account, password string, options uint32) error
	// RequestOfflineDomainJoin is NetRequestOfflineDomainJoin for the
	// running Windows with the decoded (binary) provisioning data.
	RequestOfflineDomainJoin(blob []byte) error
	// BootTime is when Windows last started.
	BootTime() (time.Time, error)
}

// NetJoiner is the Windows Joiner. A join is followed by a reboot; the
// time of the join is kept in StateDir/domain-join.json so that a rerun
// before the reboot reports RebootRequired again, and after it finds the
// machine joined.
type NetJoiner struct {
	// API reaches Windows.
	API NetAPI
	// StateDir holds domain-join.json. Default DefaultStateDir.
	StateDir string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// joinRecord is domain-join.json.
type joinRecord struct {
	Domain   string    `json:"domain"`
	JoinedAt time.Time `json:"joinedAt"`
}

func (w *NetJoiner) recordPath() string {
	d := w.StateDir
	if d == "" {
		d = DefaultStateDir
	}
	return filepath.Join(d, "domain-join.json")
}

// Membership reads NetGetJoinInformation (and the DNS domain name); a
// join recorded after the last boot is RebootPending.
func (w *NetJoiner) Membership(ctx context.Context, p *Plan) (Membership, error) {
	name, status, err := w.API.JoinInformation()
	if err != nil {
		return Membership{}, fmt.Errorf("NetGetJoinInformation: %w", err)
	}
	if status != NetSetupDomainName {
		return Membership{Detail: "not a domain member (" + name + ")"}, nil
	}
	m := Membership{Joined: true, Names: []string{name}, Detail: "NetGetJoinInformation: member of " + name}
	if dns := w.API.DNSDomain(); dns != "" {
		m.Names = append(m.Names, dns)
	}
	if data, err := os.ReadFile(w.recordPath()); err == nil {
		var rec joinRecord
		if json.Unmarshal(data, &rec) == nil && strings.EqualFold(rec.Domain, p.Domain) {
			boot, err := w.API.BootTime()
			if err != nil {
				return Membership{}, fmt.Errorf("boot time: %w", err)
			}
			m.RebootPending = RebootPending(rec.JoinedAt, boot)
			// A join made before the offline blob's account name was
			// known reports the NetBIOS name only: the record names it.
			m.Names = append(m.Names, rec.Domain)
		}
	}
	return m, nil
}

// RebootPending says that a join made at joinedAt still waits for its
// reboot: Windows last booted before it.
func RebootPending(joinedAt, bootTime time.Time) bool { return !bootTime.After(joinedAt) }

// Join calls NetJoinDomain (credentials) or NetRequestOfflineDomainJoin
// (blob), records the join and asks for a reboot.
func (w *NetJoiner) Join(ctx context.Context, p *Plan, s Secret) (Outcome, error) {
	var err error
	switch p.Method {
	case MethodCredentials:
		err = w.API.JoinDomain(JoinDomainTarget(p), p.OU, JoinAccount(p), s.Password, netapi.JoinDomain|netapi.AcctCreate)
		if err != nil {
			return Outcome{}, errclass.Errorf(errclass.DomainJoinFailed, NetHint(err), "NetJoinDomain %s: %w", p.Domain, err)
		}
	case MethodOfflineBlob:
		bin, derr := DecodeBlob(s.Blob)
		if derr != nil {
			return Outcome{}, errclass.Errorf(errclass.DomainJoinFailed, "spec.host.domainJoin.offlineJoinBlob must be the file `djoin /provision /savefile` wrote", "offline-join blob: %w", derr)
		}
		if err = w.API.RequestOfflineDomainJoin(bin); err != nil {
			return Outcome{}, errclass.Errorf(errclass.DomainJoinFailed, NetHint(err), "NetRequestOfflineDomainJoin: %w", err)
		}
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	data, _ := json.Marshal(joinRecord{Domain: p.Domain, JoinedAt: now()})
	if err := os.MkdirAll(filepath.Dir(w.recordPath()), 0o755); err != nil {
		return Outcome{}, errclass.Errorf(errclass.HostPreparationFailed, "", "state directory: %w", err)
	}
	if err := atomicfile.WriteFile(w.recordPath(), data, 0o644); err != nil {
		return Outcome{}, errclass.Errorf(errclass.HostPreparationFailed, "", "recording the join: %w", err)
	}
	return Outcome{RebootRequired: true, Detail: string(p.Method) + " join done; Windows must reboot"}, nil
}

// JoinDomainTarget is NetJoinDomain's lpDomain: the domain, or
// "domain\dc" to use one domain controller.
func JoinDomainTarget(p *Plan) string {
	if p.DomainController != "" {
		return p.Domain + `\` + p.DomainController
	}
	return p.Domain
}

// JoinAccount is NetJoinDomain's lpAccount: "user@REALM" and
// "DOMAIN\user" as given, a bare "user" qualified as "domain\user".
func JoinAccount(p *Plan) string {
	if strings.ContainsAny(p.Username, `\@`) {
		return p.Username
	}
	return p.Domain + `\` + p.Username
}

// DecodeBlob turns the text `djoin /provision /savefile` writes (base64,
// UTF-16LE with or without a byte-order mark and a trailing NUL, or
// UTF-8) into the binary provisioning data NetRequestOfflineDomainJoin
// takes.
func DecodeBlob(data []byte) ([]byte, error) {
	text := string(data)
	if utf16LE(data) {
		b := data
		if len(b) >= 2 && b[0] == 0xff && b[1] == 0xfe {
			b = b[2:]
		}
		u := make([]uint16, len(b)/2)
		for i := range u {
			u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
		}
		text = string(utf16.Decode(u))
	}
	text = strings.TrimPrefix(text, "\ufeff")
	text = strings.Map(func(r rune) rune {
		if r == 0 || r == ' ' || r == '\r' || r == '\n' || r == '\t' {
			return -1
		}
		return r
	}, text)
	if text == "" {
		return nil, errors.New("empty")
	}
	bin, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	return bin, nil
}

func utf16LE(b []byte) bool {
	if len(b) >= 2 && b[0] == 0xff && b[1] == 0xfe {
		return true
	}
	return len(b) >= 4 && b[1] == 0 && b[3] == 0
}

// NetHint chooses the hint of a failed netapi32 call by its status.
func NetHint(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return errclass.DefaultHint(errclass.DomainJoinFailed)
	}
	switch errno {
	case netapi.ErrorLogonFailure:
		return "the domain refused the account: check spec.host.domainJoin.credentials (user name and the password file's content)"
	case netapi.ErrorNoSuchDomain:
		return "no domain controller answered: check the DNS servers of this machine (they must serve the domain's SRV records) or set spec.host.domainJoin.domainController"
	case netapi.ErrorAccessDenied:
		return "the account may not create computer accounts here: delegate the right on spec.host.domainJoin.organizationalUnit"
	case netapi.NerrSetupAlreadyJoined:
		return "the machine is already in a domain: machineadm never leaves one"
	}
	return errclass.DefaultHint(errclass.DomainJoinFailed)
}
