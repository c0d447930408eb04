package domainjoin

import (
	"context"
	"syscall"
	"time"
)

// fakeJoiner is a Joiner for tests: it reports a fixed membership and
// records joins.
type fakeJoiner struct {
	membership Membership
	outcome    Outcome
	joinErr    error
	joins      []Secret
}

func (f *fakeJoiner) Membership(context.Context, *Plan) (Membership, error) { return f.membership, nil }

func (f *fakeJoiner) Join(_ context.Context, p *Plan, s Secret) (Outcome, error) {
	f.joins = append(f.joins, s)
	if f.joinErr != nil {
		return Outcome{}, f.joinErr
	}
	f.membership = Membership{Joined: true, Names: []string{p.Domain}, Detail: "fake: joined"}
	return f.outcome, nil
}

// fakeNetAPI stands in for netapi32 and kernel32 (Windows APIs cannot
// run here): a machine that joins when NetJoinDomain or
// NetRequestOfflineDomainJoin succeeds and reboots when told.
type fakeNetAPI struct {
	name     string
	status   uint32
	boot     time.Time
	joinErr  syscall.Errno
	calls    []string
	password string
	blob     []byte
}

func (f *fakeNetAPI) JoinInformation() (string, uint32, error) { return f.name, f.status, nil }
func (f *fakeNetAPI) DNSDomain() string {
	if f.status == NetSetupDomainName && f.name == "CORP" {
		return "corp.example.com"
	}
	return ""
}

func (f *fakeNetAPI) JoinDomain(domain, ou, account, password string, options uint32) error {
	f.calls = append(f.calls, "NetJoinDomain "+domain+" "+ou+" "+account)
	if f.joinErr != 0 {
		return f.joinErr
	}
	f.password = password
	f.name, f.status = "CORP", NetSetupDomainName
	return nil
}

func (f *fakeNetAPI) RequestOfflineDomainJoin(blob []byte) error {
	f.calls = append(f.calls, "NetRequestOfflineDomainJoin")
	f.blob = blob
	f.name, f.status = "CORP", NetSetupDomainName
	return nil
}

func (f *fakeNetAPI) BootTime() (time.Time, error) { return f.boot, nil }
