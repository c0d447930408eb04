package controller

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// The decisions of the control-plane controller are pure functions over
// a snapshot (machineInfo, EtcdMember): which Machine to create or delete
// next, and when to wait. The reconciler gathers the snapshot and carries
// out one decision per pass.

// machineInfo is what the decisions know of one control-plane Machine.
type machineInfo struct {
	Name          string
	Created       time.Time
	FailureDomain string
	// Deleting: the Machine has a deletion timestamp.
	Deleting bool
	// UpToDate: version, machine spec, infrastructure template and the
	// rollout deadlines all match the spec.
	UpToDate bool
	// Ready: the Machine's Ready condition is True.
	Ready bool
	// Node is the Machine's Node name, "" before it has one.
	Node string
	// Version is the Machine's spec.version.
	Version string
	// Unhealthy: a MachineHealthCheck marked it and waits for this
	// controller to remediate it (HealthCheckSucceeded False,
	// OwnerRemediated False).
	Unhealthy bool
}

// EtcdMember is one member of the stacked etcd cluster.
type EtcdMember struct {
	ID uint64
	// Name is the member name, which kubeadm sets to the node name.
	Name string
	// Healthy: the member answered a status request with a leader and
	// without an alarm or error.
	Healthy bool
}

// etcdView is the etcd cluster as the controller sees it; nil when the
// control plane uses an external etcd (nothing to manage).
type etcdView struct {
	Members []EtcdMember
}

// actionKind is what one reconcile pass does to the Machines.
type actionKind int

const (
	actNone actionKind = iota
	// actWait: nothing may change now; Reason and Message say why.
	actWait
	// actCreate: create one Machine (in FailureDomain).
	actCreate
	// actDelete: delete Machine (scale down or rollout).
	actDelete
	// actRemediate: delete the unhealthy Machine.
	actRemediate
)

// Wait and progress reasons (condition reasons on the control plane).
const (
	ReasonWaitingForDeletion       = "WaitingForMachineDeletion"
	ReasonWaitingForInitialization = "WaitingForControlPlaneInitialization"
	ReasonWaitingForMachineReady   = "WaitingForMachineReady"
	ReasonEtcdUnhealthy            = "EtcdUnhealthy"
	ReasonWaitingForQuorum         = "WaitingForEtcdQuorum"
	ReasonScalingUp                = "ScalingUp"
	ReasonScalingDown              = "ScalingDown"
	ReasonRollingOut               = "RollingOut"
	ReasonUpToDate                 = "UpToDate"
	ReasonRemediating              = "Remediating"
	ReasonRemediationRetries       = "RemediationRetriesExhausted"
	ReasonRemediationRetryPeriod   = "WaitingForRemediationRetryPeriod"
	ReasonLastMachine              = "LastControlPlaneMachine"
	ReasonNotRemediating           = "NotRemediating"
	ReasonVersionSkew              = "VersionSkew"
)

// decision is the outcome of decide.
type decision struct {
	Kind actionKind
	// Machine is the Machine to delete (actDelete, actRemediate), or the
	// unhealthy Machine a remediation wait is about (actWait).
	Machine string
	// FailureDomain is where to create (actCreate); "" for none.
	FailureDomain string
	// Reason and Message explain the decision (condition reason and
	// message).
	Reason, Message string
	// Retry is the remediation retry count to record (actRemediate).
	Retry int32
}

// remediationPolicy bounds remediation (spec.remediation with defaults).
type remediationPolicy struct {
	MaxRetry         int32
	RetryPeriod      time.Duration
	MinHealthyPeriod time.Duration
}

// lastRemediation is status.lastRemediation.
type lastRemediation struct {
	Machine string
	Time    time.Time
	Retry   int32
}

// state is the snapshot decide works on.
type state struct {
	Desired  int
	MaxSurge int
	Machines []machineInfo
	// Initialized: the control plane is initialised (status).
	Initialized bool
	// Etcd is nil for an external etcd.
	Etcd *etcdView
	// FailureDomains are the Cluster's failure domains for control-plane
	// Machines, sorted.
	FailureDomains []string
	Remediation    remediationPolicy
	Last           *lastRemediation
	Now            time.Time
	// VersionProblem, when not empty, says why spec.version cannot be
	// rolled out from the Machines' versions (versionSkew).
	VersionProblem string
}

// decide returns the one thing to do next. Order: wait for a deletion in
// progress; create the first Machine; wait for initialisation; remediate;
// wait until every Machine is Ready and etcd is healthy; scale up; scale
// down or roll out.
func decide(s state) decision {
	if d := deletingMachine(s.Machines); d != "" {
		return decision{Kind: actWait, Reason: ReasonWaitingForDeletion, Message: "Machine " + d + " is being deleted; one Machine changes at a time"}
	}
	if len(s.Machines) == 0 {
		return decision{Kind: actCreate, FailureDomain: pickFailureDomain(s.FailureDomains, s.Machines), Reason: ReasonScalingUp, Message: "creating the first control-plane Machine (kubeadm init)"}
	}
	if !s.Initialized {
		// A first Machine that fails before the control plane is
		// initialised is replaced: no member has joined it yet.
		if d, ok := remediate(s); ok {
			return d
		}
		return decision{Kind: actWait, Reason: ReasonWaitingForInitialization, Message: "waiting for the first control-plane Machine's Node"}
	}
	if s.VersionProblem != "" {
		return decision{Kind: actWait, Reason: ReasonVersionSkew, Message: s.VersionProblem + "; no Machine is created or removed until spec.version is fixed"}
	}
	if d, ok := remediate(s); ok {
		return d
	}
	for _, m := range s.Machines {
		if !m.Ready {
			return decision{Kind: actWait, Reason: ReasonWaitingForMachineReady, Message: "Machine " + m.Name + " is not Ready; the next change waits for it"}
		}
	}
	if s.Etcd != nil {
		for _, mb := range s.Etcd.Members {
			if !mb.Healthy {
				return decision{Kind: actWait, Reason: ReasonEtcdUnhealthy, Message: "etcd member " + mb.Name + " is not healthy; no Machine is added or removed until it is"}
			}
		}
	}
	n := len(s.Machines)
	outdated := 0
	for _, m := range s.Machines {
		if !m.UpToDate {
			outdated++
		}
	}
	switch {
	case n < s.Desired:
		return decision{Kind: actCreate, FailureDomain: pickFailureDomain(s.FailureDomains, s.Machines), Reason: ReasonScalingUp, Message: fmt.Sprintf("scaling up from %d to %d Machines", n, s.Desired)}
	case n > s.Desired:
		return guardedDelete(s, ReasonScalingDown, fmt.Sprintf("scaling down from %d to %d Machines", n, s.Desired))
	case outdated > 0 && s.MaxSurge > 0:
		return decision{Kind: actCreate, FailureDomain: pickFailureDomain(s.FailureDomains, s.Machines), Reason: ReasonRollingOut, Message: fmt.Sprintf("%d Machine(s) out of date: creating a replacement first", outdated)}
	case outdated > 0:
		return guardedDelete(s, ReasonRollingOut, fmt.Sprintf("%d Machine(s) out of date: removing one first (maxSurge 0)", outdated))
	}
	return decision{Kind: actNone, Reason: ReasonUpToDate}
}

// guardedDelete picks the Machine to remove and refuses when etcd would
// lose quorum.
func guardedDelete(s state, reason, msg string) decision {
	victim := selectForScaleDown(s.Machines, s.FailureDomains)
	if ok, reason, why := canRemove(s, victim); !ok {
		return decision{Kind: actWait, Reason: reason, Message: "not removing Machine " + victim.Name + ": " + why}
	}
	return decision{Kind: actDelete, Machine: victim.Name, Reason: reason, Message: msg + ": removing Machine " + victim.Name}
}

func deletingMachine(ms []machineInfo) string {
	for _, m := range ms {
		if m.Deleting {
			return m.Name
		}
	}
	return ""
}

// selectForScaleDown picks the Machine to remove: among the out-of-date
// Machines if there are any (else all), those in the failure domain that
// holds the most Machines, and of those the oldest (then by name).
func selectForScaleDown(ms []machineInfo, fds []string) machineInfo {
	cands := make([]machineInfo, 0, len(ms))
	for _, m := range ms {
		if !m.UpToDate {
			cands = append(cands, m)
		}
	}
	if len(cands) == 0 {
		cands = append(cands, ms...)
	}
	count := map[string]int{}
	for _, m := range ms {
		count[m.FailureDomain]++
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if count[a.FailureDomain] != count[b.FailureDomain] {
			return count[a.FailureDomain] > count[b.FailureDomain]
		}
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		return a.Name < b.Name
	})
	return cands[0]
}

// pickFailureDomain returns the failure domain with the fewest live
// Machines (ties by name), or "" when the Cluster has none.
func pickFailureDomain(fds []string, ms []machineInfo) string {
	if len(fds) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, m := range ms {
		if !m.Deleting {
			count[m.FailureDomain]++
		}
	}
	best := fds[0]
	for _, fd := range fds[1:] {
		if count[fd] < count[best] || (count[fd] == count[best] && fd < best) {
			best = fd
		}
	}
	return best
}

// canRemove reports whether removing Machine m keeps the control plane
// alive: never the last Machine of an initialised control plane (before
// initialisation there is nothing to keep), and with a stacked etcd the members
// left must hold a healthy quorum (a majority of the remaining member
// count). A Machine whose Node never joined etcd removes no member. When
// it refuses, reason is ReasonLastMachine or
// ReasonWaitingForQuorum and why says what would be lost.
func canRemove(s state, m machineInfo) (ok bool, reason, why string) {
	live := 0
	for _, x := range s.Machines {
		if !x.Deleting {
			live++
		}
	}
	if live <= 1 && s.Initialized {
		return false, ReasonLastMachine, "it is the last control-plane Machine"
	}
	if s.Etcd == nil {
		return true, "", ""
	}
	if ok, why := quorumAfterRemoval(s.Etcd.Members, m.Node); !ok {
		return false, ReasonWaitingForQuorum, why
	}
	return true, "", ""
}

// quorumAfterRemoval reports whether removing the member named node
// (none if no member has that name) leaves a majority of the remaining
// members healthy.
func quorumAfterRemoval(members []EtcdMember, node string) (bool, string) {
	total, healthy := 0, 0
	for _, mb := range members {
		if node != "" && mb.Name == node {
			continue
		}
		total++
		if mb.Healthy {
			healthy++
		}
	}
	if total == 0 {
		return false, "it holds the last etcd member"
	}
	need := total/2 + 1
	if healthy < need {
		return false, fmt.Sprintf("etcd would keep %d healthy of %d members, below the quorum of %d", healthy, total, need)
	}
	return true, ""
}

// versionSkew says why Machines at version want cannot join or replace
// Machines at the versions have: kubeadm upgrades a control plane one
// minor version at a time and never downgrades across minors. "" when
// it can; unparsable versions are left to admission and the bootstrap.
func versionSkew(want string, have []string) string {
	w, err := version.ParseSemantic(want)
	if err != nil {
		return ""
	}
	for _, h := range have {
		v, err := version.ParseSemantic(h)
		if err != nil {
			continue
		}
		switch {
		case w.Major() != v.Major():
			return fmt.Sprintf("spec.version %s and a Machine's %s differ in the major version", want, h)
		case w.Minor() < v.Minor():
			return fmt.Sprintf("spec.version %s is a downgrade from a Machine's %s across minor versions", want, h)
		case w.Minor() > v.Minor()+1:
			return fmt.Sprintf("spec.version %s skips a minor version from a Machine's %s: upgrade one minor version at a time", want, h)
		}
	}
	return ""
}

// remediate decides about Machines a MachineHealthCheck marked unhealthy.
// ok is false when there is none (the caller goes on); otherwise the
// decision is either actRemediate or a wait that says why.
func remediate(s state) (decision, bool) {
	var bad []machineInfo
	for _, m := range s.Machines {
		if m.Unhealthy {
			bad = append(bad, m)
		}
	}
	if len(bad) == 0 {
		return decision{}, false
	}
	sort.SliceStable(bad, func(i, j int) bool {
		if !bad[i].Created.Equal(bad[j].Created) {
			return bad[i].Created.Before(bad[j].Created)
		}
		return bad[i].Name < bad[j].Name
	})
	m := bad[0]
	retry := int32(0)
	if l := s.Last; l != nil {
		since := s.Now.Sub(l.Time)
		if since < s.Remediation.RetryPeriod {
			return decision{Kind: actWait, Machine: m.Name, Reason: ReasonRemediationRetryPeriod, Message: fmt.Sprintf("Machine %s is unhealthy; the last remediation (%s) was %s ago, less than the retry period %s", m.Name, l.Machine, since.Round(time.Second), s.Remediation.RetryPeriod)}, true
		}
		// A replacement that fails again soon continues the count.
		if m.Created.After(l.Time) && since < s.Remediation.MinHealthyPeriod {
			retry = l.Retry + 1
		}
	}
	if retry > s.Remediation.MaxRetry {
		return decision{Kind: actWait, Machine: m.Name, Reason: ReasonRemediationRetries, Message: fmt.Sprintf("Machine %s is unhealthy, but %d remediations in a row failed (maxRetry %d); fix the cause and delete the Machine by hand", m.Name, retry, s.Remediation.MaxRetry)}, true
	}
	if ok, reason, why := canRemove(s, m); !ok {
		return decision{Kind: actWait, Machine: m.Name, Reason: reason, Message: "Machine " + m.Name + " is unhealthy but is not remediated: " + why}, true
	}
	return decision{Kind: actRemediate, Machine: m.Name, Retry: retry, Reason: ReasonRemediating, Message: "remediating unhealthy Machine " + m.Name}, true
}
