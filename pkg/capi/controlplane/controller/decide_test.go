package controller

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// m is a Ready, up-to-date Machine created i minutes after t0 with Node
// "n-<name>".
func m(name string, i int, fd string) machineInfo {
	return machineInfo{Name: name, Created: t0.Add(time.Duration(i) * time.Minute), FailureDomain: fd, UpToDate: true, Ready: true, Node: "n-" + name}
}

func with(x machineInfo, f func(*machineInfo)) machineInfo { f(&x); return x }

func outdated(x *machineInfo)  { x.UpToDate = false }
func notReady(x *machineInfo)  { x.Ready = false }
func deleting(x *machineInfo)  { x.Deleting = true }
func unhealthy(x *machineInfo) { x.Unhealthy = true }

// members makes one healthy etcd member per Machine, named after its
// Node; names in sick are unhealthy.
func members(ms []machineInfo, sick ...string) *etcdView {
	v := &etcdView{}
	for i, x := range ms {
		h := true
		for _, s := range sick {
			if s == x.Name {
				h = false
			}
		}
		v.Members = append(v.Members, EtcdMember{ID: uint64(i + 1), Name: x.Node, Healthy: h})
	}
	return v
}

func defaultPolicy() remediationPolicy {
	return remediationPolicy{MaxRetry: 3, MinHealthyPeriod: time.Hour}
}

func TestDecide(t *testing.T) {
	three := []machineInfo{m("a", 0, ""), m("b", 1, ""), m("c", 2, "")}
	threeFD := []machineInfo{m("a", 0, "z1"), m("b", 1, "z2"), m("c", 2, "z1")}
	cases := []struct {
		name        string
		s           state
		kind        actionKind
		machine     string
		reason      string
		fd          string
		retry       int32
		skipMembers bool
	}{
		{name: "first Machine", s: state{Desired: 3, MaxSurge: 1}, kind: actCreate, reason: ReasonScalingUp},
		{name: "first Machine in the emptiest failure domain", s: state{Desired: 3, MaxSurge: 1, FailureDomains: []string{"z1", "z2"}}, kind: actCreate, fd: "z1"},
		{name: "waits for init", s: state{Desired: 3, MaxSurge: 1, Machines: []machineInfo{with(m("a", 0, ""), notReady)}}, kind: actWait, reason: ReasonWaitingForInitialization},
		{name: "joins the second once the first is Ready", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: three[:1]}, kind: actCreate, reason: ReasonScalingUp},
		{name: "one join at a time: waits for the previous one", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: []machineInfo{m("a", 0, ""), with(m("b", 1, ""), notReady)}}, kind: actWait, reason: ReasonWaitingForMachineReady},
		{name: "waits while a Machine is deleted", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: []machineInfo{m("a", 0, ""), with(m("b", 1, ""), deleting)}}, kind: actWait, reason: ReasonWaitingForDeletion},
		{name: "up to date: nothing", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: three}, kind: actNone},
		{name: "scale down removes the oldest in the fullest failure domain", s: state{Desired: 1, MaxSurge: 1, Initialized: true, Machines: threeFD, FailureDomains: []string{"z1", "z2"}}, kind: actDelete, machine: "a", reason: ReasonScalingDown},
		{name: "scale down removes an out-of-date Machine first", s: state{Desired: 1, MaxSurge: 1, Initialized: true, Machines: []machineInfo{m("a", 0, ""), m("b", 1, ""), with(m("c", 2, ""), outdated)}}, kind: actDelete, machine: "c"},
		{name: "rollout with maxSurge 1 creates first", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: []machineInfo{with(m("a", 0, ""), outdated), m("b", 1, ""), m("c", 2, "")}}, kind: actCreate, reason: ReasonRollingOut},
		{name: "rollout then removes the out-of-date one", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: []machineInfo{m("a", 0, ""), with(m("b", 1, ""), outdated), m("c", 2, ""), m("d", 3, "")}}, kind: actDelete, machine: "b"},
		{name: "rollout with maxSurge 0 removes first", s: state{Desired: 3, MaxSurge: 0, Initialized: true, Machines: []machineInfo{with(m("a", 0, ""), outdated), with(m("b", 1, ""), outdated), m("c", 2, "")}}, kind: actDelete, machine: "a", reason: ReasonRollingOut},
		{name: "rollout with maxSurge 0 and one Machine never removes the last", s: state{Desired: 1, MaxSurge: 0, Initialized: true, Machines: []machineInfo{with(m("a", 0, ""), outdated)}}, kind: actWait, reason: ReasonLastMachine},
		{name: "no change while an etcd member is unhealthy", s: state{Desired: 1, MaxSurge: 1, Initialized: true, Machines: three, Etcd: members(three, "b")}, kind: actWait, reason: ReasonEtcdUnhealthy, skipMembers: true},
		{name: "a version that skips a minor blocks changes", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: three, VersionProblem: "skips"}, kind: actWait, reason: ReasonVersionSkew},
		{name: "a first Machine that fails before init is remediated", s: state{Desired: 3, MaxSurge: 1, Machines: []machineInfo{with(with(m("a", 0, ""), unhealthy), notReady)}, Remediation: defaultPolicy(), Now: t0.Add(time.Hour)}, kind: actRemediate, machine: "a"},
		{name: "remediates an unhealthy Machine", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: []machineInfo{m("a", 0, ""), with(with(m("b", 1, ""), unhealthy), notReady), m("c", 2, "")}, Remediation: defaultPolicy(), Now: t0.Add(time.Hour)}, kind: actRemediate, machine: "b", reason: ReasonRemediating},
		{name: "remediation never loses quorum", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: []machineInfo{m("a", 0, ""), with(m("b", 1, ""), unhealthy), with(m("c", 2, ""), notReady)}, Remediation: defaultPolicy(), Now: t0.Add(time.Hour)}, kind: actWait, reason: ReasonWaitingForQuorum},
		{name: "remediation never removes the only Machine", s: state{Desired: 1, MaxSurge: 1, Initialized: true, Machines: []machineInfo{with(m("a", 0, ""), unhealthy)}, Remediation: defaultPolicy(), Now: t0.Add(time.Hour)}, kind: actWait, reason: ReasonLastMachine},
		{name: "remediation waits for the retry period", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: []machineInfo{m("a", 0, ""), with(m("b", 1, ""), unhealthy), m("c", 2, "")}, Remediation: remediationPolicy{MaxRetry: 3, RetryPeriod: 10 * time.Minute, MinHealthyPeriod: time.Hour}, Last: &lastRemediation{Machine: "x", Time: t0.Add(55 * time.Minute)}, Now: t0.Add(time.Hour)}, kind: actWait, reason: ReasonRemediationRetryPeriod},
		{name: "remediation stops after maxRetry in a row", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: []machineInfo{m("a", 0, ""), m("b", 1, ""), with(m("c", 50, ""), unhealthy)}, Remediation: defaultPolicy(), Last: &lastRemediation{Machine: "x", Time: t0.Add(40 * time.Minute), Retry: 3}, Now: t0.Add(time.Hour)}, kind: actWait, reason: ReasonRemediationRetries},
		{name: "a replacement failing soon counts a retry", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: []machineInfo{m("a", 0, ""), m("b", 1, ""), with(m("c", 50, ""), unhealthy)}, Remediation: defaultPolicy(), Last: &lastRemediation{Machine: "x", Time: t0.Add(40 * time.Minute), Retry: 1}, Now: t0.Add(time.Hour)}, kind: actRemediate, machine: "c", retry: 2},
		{name: "after the healthy period the count starts again", s: state{Desired: 3, MaxSurge: 1, Initialized: true, Machines: []machineInfo{m("a", 0, ""), m("b", 1, ""), with(m("c", 50, ""), unhealthy)}, Remediation: defaultPolicy(), Last: &lastRemediation{Machine: "x", Time: t0.Add(40 * time.Minute), Retry: 3}, Now: t0.Add(3 * time.Hour)}, kind: actRemediate, machine: "c", retry: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			if s.Etcd == nil && !c.skipMembers && s.Initialized {
				// etcd as the Machines say: a Machine not Ready has an
				// unhealthy member.
				var sick []string
				for _, x := range s.Machines {
					if !x.Ready || x.Unhealthy {
						sick = append(sick, x.Name)
					}
				}
				s.Etcd = members(s.Machines, sick...)
			}
			d := decide(s)
			if d.Kind != c.kind || (c.machine != "" && d.Machine != c.machine) || (c.reason != "" && d.Reason != c.reason) || d.FailureDomain != c.fd || d.Retry != c.retry {
				t.Fatalf("decide = %+v, want kind %d machine %q reason %q fd %q retry %d", d, c.kind, c.machine, c.reason, c.fd, c.retry)
			}
			if d.Kind == actWait && d.Message == "" {
				t.Fatal("a wait without a message")
			}
		})
	}
}

func TestQuorumAfterRemoval(t *testing.T) {
	mk := func(healthy ...bool) []EtcdMember {
		var out []EtcdMember
		for i, h := range healthy {
			out = append(out, EtcdMember{ID: uint64(i + 1), Name: string(rune('a' + i)), Healthy: h})
		}
		return out
	}
	cases := []struct {
		name    string
		members []EtcdMember
		remove  string
		ok      bool
	}{
		{"3 healthy, remove one", mk(true, true, true), "a", true},
		{"3 with one sick, remove a healthy one", mk(true, false, true), "a", false},
		{"3 with one sick, remove the sick one", mk(true, false, true), "b", true},
		{"2 healthy, remove one", mk(true, true), "a", true},
		{"the last member", mk(true), "a", false},
		{"5 with two sick, remove a healthy one", mk(true, true, true, false, false), "a", false},
		{"5 with two sick, remove a sick one", mk(true, true, true, false, false), "d", true},
		{"not a member: the current quorum counts", mk(true, true, false), "zz", true},
		{"not a member, no quorum now", mk(true, false, false), "zz", false},
	}
	for _, c := range cases {
		if ok, why := quorumAfterRemoval(c.members, c.remove); ok != c.ok || (!ok && why == "") {
			t.Errorf("%s: ok = %v (%s), want %v", c.name, ok, why, c.ok)
		}
	}
}

func TestSelectForScaleDownSpreadsOverFailureDomains(t *testing.T) {
	// z1 holds two Machines, z2 one: the oldest of z1 goes, even though
	// the z2 one is older still.
	ms := []machineInfo{m("old-z2", 0, "z2"), m("a-z1", 1, "z1"), m("b-z1", 2, "z1")}
	if got := selectForScaleDown(ms, []string{"z1", "z2"}).Name; got != "a-z1" {
		t.Fatalf("selected %s, want a-z1", got)
	}
	if got := pickFailureDomain([]string{"z1", "z2", "z3"}, ms); got != "z3" {
		t.Fatalf("picked %s, want the empty z3", got)
	}
	if got := pickFailureDomain(nil, ms); got != "" {
		t.Fatalf("picked %q without failure domains", got)
	}
}

func TestVersionSkew(t *testing.T) {
	cases := []struct {
		want string
		have []string
		ok   bool
	}{
		{"v1.37.2", []string{"v1.36.4", "v1.37.2"}, true},
		{"v1.37.2", []string{"v1.37.0"}, true},
		{"v1.37.0", []string{"v1.37.2"}, true},
		{"v1.37.2", []string{"v1.35.9"}, false},
		{"v1.36.4", []string{"v1.37.2"}, false},
		{"v2.0.0", []string{"v1.37.2"}, false},
		{"v1.37.2", nil, true},
	}
	for _, c := range cases {
		if got := versionSkew(c.want, c.have); (got == "") != c.ok {
			t.Errorf("versionSkew(%s, %v) = %q, want ok %v", c.want, c.have, got, c.ok)
		}
	}
}
