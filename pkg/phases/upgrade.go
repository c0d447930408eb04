package phases

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/kubeadm/systemd"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

// UpgradeRun is what the phases of one `machineadm upgrade` share, set by
// the session before the run (Data.Upgrade).
type UpgradeRun struct {
	// Plan is the plan from the recorded spec to the new one; the session
	// refused the run (exit code 2) when it had a refused change.
	Plan *upgrade.Plan
	// Record is the node's recorded spec; its Key keeps the new record's
	// withheld digests comparable.
	Record *upgrade.Record
	// SpecDigest is the new spec file's digest ("sha256:<hex>"), recorded
	// by record-spec. (Data.SpecDigest is the journal's key,
	// upgrade.JournalKey.)
	SpecDigest string
	// SkipDrain skips drain and uncordon (--skip-drain).
	SkipDrain bool
	// DrainTimeout bounds the drain (--drain-timeout); 0 is
	// DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Kubeconfig is the credential for cordon, drain and uncordon (host
	// path); "" is kubeadm's admin.conf, which a control plane has.
	Kubeconfig string
	// Cluster does what the upgrade asks of the cluster and of kubeadm;
	// nil is the real one (pkg/kubeadm/day2, upgradecluster.go). Tests
	// set a fake.
	Cluster UpgradeCluster

	// backupDir is where this run backs up the manifests it replaces.
	backupDir string
	// apiServerConfigChanged says apiserver-config rewrote a file of the
	// API server in this run.
	apiServerConfigChanged bool
	// kubeadm runs this run's kubeadm upgrade phases, keeping kubeadm's
	// upgrade data between them (runKubeadmUpgrade); nil until the first.
	kubeadm *day2.UpgradeRunner
}

// DefaultDrainTimeout bounds a drain when --drain-timeout is not given.
const DefaultDrainTimeout = 5 * time.Minute

// UpgradeCluster is what the upgrade phases do to the cluster and through
// kubeadm: one implementation (pkg/kubeadm/day2, NewCluster), a fake in
// tests.
type UpgradeCluster interface {
	// Drain cordons the node and evicts its pods (Eviction API), within
	// timeout; it returns lines for the report.
	Drain(ctx context.Context, kubeconfig, node string, timeout time.Duration) ([]string, error)
	// Uncordon makes the node schedulable.
	Uncordon(ctx context.Context, kubeconfig, node string) error
	// KubeadmPhase runs one phase of kubeadm's upgrade (apply on the first
	// control plane, node elsewhere) by its kubeadm name.
	KubeadmPhase(ctx context.Context, d *Data, name string) error
	// RestartKubelet restarts the kubelet and waits, bounded, until the
	// Node reports version.
	RestartKubelet(ctx context.Context, d *Data, node, version string) ([]string, error)
	// RenewCertificates renews kubeadm's certificates that expire within
	// the window; it returns the renewed ones, and those it could not
	// renew (an external CA's) as lines that start with
	// day2.WarningPrefix.
	RenewCertificates(ctx context.Context, d *Data) ([]string, error)
	// RestartForCertificates restarts a static pod control-plane
	// component that does not run the client certificates on disk
	// (day2.RestartForCertificates), healthy before it returns; Changed
	// false when it runs them or reads none at start (etcd, the API
	// server). With onlyStale, a manifest without the certificates'
	// digest (as kubeadm writes it) is left alone
	// (day2.StaticPodOptions.OnlyStale).
	RestartForCertificates(ctx context.Context, d *Data, component string, onlyStale bool) (Result, error)
}

// ControlPlaneUpgrader replaces one control-plane component of a runtime
// (upgrade.ControlPlaneComponents) with what the new spec asks: the
// static pods' upgrader regenerates the component's manifest with
// kubeadm's code, backs the old one up, waits for the component's health
// and puts the old one back when it does not become healthy. The Systemd
// runtime registers its own (RegisterControlPlaneUpgrader).
type ControlPlaneUpgrader interface {
	// UpgradeComponent replaces component (Changed false when it already
	// is as the spec asks). A rollback is said in the Result's changes and
	// the error.
	UpgradeComponent(ctx context.Context, d *Data, component string) (Result, error)
}

var (
	cpUpgradersMu sync.Mutex
	cpUpgraders   = map[machineadm.ControlPlaneRuntime]ControlPlaneUpgrader{}
)

// RegisterControlPlaneUpgrader sets the upgrader of runtime's control
// plane; call it from an init function. A second registration of a
// runtime replaces the first.
func RegisterControlPlaneUpgrader(runtime machineadm.ControlPlaneRuntime, u ControlPlaneUpgrader) {
	cpUpgradersMu.Lock()
	defer cpUpgradersMu.Unlock()
	cpUpgraders[runtime] = u
}

func controlPlaneUpgrader(runtime machineadm.ControlPlaneRuntime) ControlPlaneUpgrader {
	cpUpgradersMu.Lock()
	defer cpUpgradersMu.Unlock()
	return cpUpgraders[runtime]
}

// newCluster returns the real UpgradeCluster (upgradecluster.go).
var newCluster func() UpgradeCluster

func (u *UpgradeRun) cluster() UpgradeCluster {
	if u.Cluster == nil && newCluster != nil {
		u.Cluster = newCluster()
	}
	return u.Cluster
}

// notPlanned is the message of an upgrade phase the plan does not need.
const notPlanned = "not in the plan"

// Upgrade returns the `machineadm upgrade` workflow for a validated hub
// spec: the same tree on every run of the spec (upgrade.PhaseOrder), each
// phase doing its part of Data.Upgrade.Plan and reporting Unchanged
// ("not in the plan") when the plan does not need it. The host phases
// are bootstrap's, converging the host as at bootstrap (apiserver-config
// rewrites the API server's typed security files before the control
// plane is regenerated); with spec.security.profile the compliance
// phases (harden, evidence) run on the upgraded node before the spec is
// recorded.
func Upgrade(cfg *machineadm.MachineBootstrapConfig) *Workflow {
	before, after := HostGroup(cfg)
	w := &Workflow{Command: "upgrade", State: true}
	w.Phases = append(w.Phases, upgradeInputsCheck(), upgradePlanPhase(), drainPhase())
	for _, p := range before {
		if p.Name == upgrade.PhaseAPIServerConfig {
			p = withAPIServerConfigBackup(p)
		}
		w.Phases = append(w.Phases, p)
	}
	w.Phases = append(w.Phases, kubeadmUpgradePhase(cfg))
	if cfg.Spec.ControlPlane != nil {
		w.Phases = append(w.Phases, controlPlanePhase())
	}
	w.Phases = append(w.Phases, kubeletPhase())
	w.Phases = append(w.Phases, after...)
	if cfg.Spec.ControlPlane != nil {
		w.Phases = append(w.Phases, certsRenewPhase())
	}
	w.Phases = append(w.Phases, uncordonPhase())
	// With a profile, its checks run again on every upgrade, as at
	// bootstrap: a kubeadm upgrade rewrites files the profile hardens,
	// and a changed spec.security is planned here (upgrade.PhaseCompliance).
	w.Phases = append(w.Phases, CompliancePhase(cfg)...)
	w.Phases = append(w.Phases, recordSpecPhase())
	return w
}

// errNoUpgrade is an upgrade phase run without Data.Upgrade: a bug.
var errNoUpgrade = errclass.New(errclass.Internal, "", fmt.Errorf("no upgrade plan for the upgrade phases"))

// upgradeInputsCheck refuses a spec for another OS and opens its sealed
// secrets, as bootstrap's inputs-check; the secret files a bootstrap
// reads once (a join's token, the certificate key) may be gone by now and
// are not read.
func upgradeInputsCheck() Phase {
	return Phase{
		Name:       InputsCheckPhase,
		Short:      "Check the spec is for this OS and open its sealed secrets; change nothing",
		Class:      errclass.PayloadUnavailable,
		Check:      true,
		reconverge: true,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			if err := host.CheckOS(d.Config); err != nil {
				return Result{}, err
			}
			u, err := unseal(d)
			if err != nil {
				return Result{}, err
			}
			if u != nil {
				return Result{Message: fmt.Sprintf("sealed secrets opened by %s key %s (%d items)", u.By.Type, u.By.KeyID, len(u.Items))}, nil
			}
			return Result{Message: "inputs checked"}, nil
		},
	}
}

func upgradePlanPhase() Phase {
	return Phase{
		Name:  upgrade.PhasePlan,
		Short: "Compare the recorded spec with the new one and print the plan; change nothing",
		Class: errclass.InvalidSpec,
		Check: true,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			if d.Upgrade == nil || d.Upgrade.Plan == nil {
				return Result{}, errNoUpgrade
			}
			p := d.Upgrade.Plan
			var b strings.Builder
			p.Print(&b)
			fmt.Fprint(d.out(), b.String())
			var phases []string
			for _, s := range p.Steps {
				phases = append(phases, s.Phase)
			}
			msg := fmt.Sprintf("Kubernetes %s -> %s; %d change(s)", p.From, p.To, len(p.Changes))
			if len(phases) > 0 {
				msg += "; phases: " + strings.Join(phases, ", ")
			}
			return Result{Message: msg}, nil
		},
	}
}

// planned returns the plan's step of phase, or a Result saying the plan
// does not need it.
func planned(d *Data, phase string) (upgrade.Step, *Result, error) {
	if d.Upgrade == nil || d.Upgrade.Plan == nil {
		return upgrade.Step{}, nil, errNoUpgrade
	}
	s, ok := d.Upgrade.Plan.Step(phase)
	if !ok {
		return s, &Result{Message: notPlanned}, nil
	}
	return s, nil, nil
}

func nodeName(d *Data) string { return NodeName(d.Config) }

func drainPhase() Phase {
	return Phase{
		Name:  upgrade.PhaseDrain,
		Short: "Cordon the node and evict its pods through the Eviction API (PodDisruptionBudgets hold), bounded by --drain-timeout",
		Class: errclass.DrainFailed,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			_, skip, err := planned(d, upgrade.PhaseDrain)
			if skip != nil || err != nil {
				return resultOf(skip), err
			}
			u := d.Upgrade
			if u.SkipDrain {
				return Result{Message: "skipped by --skip-drain"}, nil
			}
			timeout := u.DrainTimeout
			if timeout <= 0 {
				timeout = DefaultDrainTimeout
			}
			node := nodeName(d)
			if d.DryRun {
				return Result{Changed: true, Changes: []string{fmt.Sprintf("would cordon Node %s and evict its pods (at most %s)", node, timeout)}}, nil
			}
			lines, err := u.cluster().Drain(ctx, drainCredential(d, u.Kubeconfig), node, timeout)
			return Result{Changed: true, Changes: lines}, err
		},
	}
}

func uncordonPhase() Phase {
	return Phase{
		Name:  upgrade.PhaseUncordon,
		Short: "Make the node schedulable again after the drain",
		Class: errclass.DrainFailed,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			_, skip, err := planned(d, upgrade.PhaseUncordon)
			if skip != nil || err != nil {
				return resultOf(skip), err
			}
			u := d.Upgrade
			if u.SkipDrain {
				return Result{Message: "skipped by --skip-drain"}, nil
			}
			node := nodeName(d)
			if d.DryRun {
				return Result{Changed: true, Changes: []string{"would uncordon Node " + node}}, nil
			}
			if err := u.cluster().Uncordon(ctx, drainCredential(d, u.Kubeconfig), node); err != nil {
				return Result{}, err
			}
			return Result{Changed: true, Changes: []string{"uncordoned Node " + node}}, nil
		},
	}
}

func resultOf(r *Result) Result {
	if r == nil {
		return Result{}
	}
	return *r
}

// controlPlanePhase replaces the components the plan names, one at a
// time, with the runtime's ControlPlaneUpgrader.
func controlPlanePhase() Phase {
	p := Phase{Name: upgrade.PhaseControlPlane, Short: "Apply changed control-plane settings, one component at a time, each healthy before the next (backup, rollback)", Class: errclass.ControlPlaneUnhealthy}
	for _, c := range upgrade.ControlPlaneComponents {
		p.Phases = append(p.Phases, Phase{
			Name:  c,
			Short: "Regenerate and replace " + c + " when its settings changed",
			Class: errclass.ControlPlaneUnhealthy,
			Run: func(ctx context.Context, d *Data) (Result, error) {
				s, skip, err := planned(d, upgrade.PhaseControlPlane)
				if err != nil {
					return Result{}, err
				}
				if skip != nil || !containsString(s.Components, c) {
					// A file the API server reads at start may have a new
					// content with the same spec (a key delivered by file).
					if restart, err := apiServerFilesChanged(d, c); err != nil || !restart {
						return Result{Message: notPlanned}, err
					}
				}
				rt := d.Config.Spec.ControlPlane.Runtime
				if rt == "" {
					rt = machineadm.RuntimeStaticPods
				}
				if d.DryRun {
					plan := []string{"would replace " + c + " (" + string(rt) + " runtime) with the new settings: back it up, wait until it is healthy, roll it back if it is not"}
					if FirstControlPlane(d.Config) {
						plan = append(plan, storeSettingsPlan)
					}
					return Result{Changed: true, Changes: plan}, nil
				}
				u := controlPlaneUpgrader(rt)
				if u == nil {
					return Result{}, errclass.New(errclass.Internal, "", fmt.Errorf("no control-plane upgrader for runtime %s in this build", rt))
				}
				return u.UpgradeComponent(ctx, d, c)
			},
		})
	}
	return p
}

func containsString(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

func kubeletPhase() Phase {
	return Phase{
		Name:  upgrade.PhaseKubelet,
		Short: "Restart the kubelet on its new binary or configuration and wait until the Node reports the new version",
		Class: errclass.KubeletFailed,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			_, skip, err := planned(d, upgrade.PhaseKubelet)
			if skip != nil || err != nil {
				return resultOf(skip), err
			}
			node, v := nodeName(d), d.Upgrade.Plan.To
			if d.DryRun {
				return Result{Changed: true, Changes: []string{"would restart kubelet.service and wait until Node " + node + " reports " + v}}, nil
			}
			lines, err := d.Upgrade.cluster().RestartKubelet(ctx, d, node, v)
			return Result{Changed: true, Changes: lines}, err
		},
	}
}

func certsRenewPhase() Phase {
	return Phase{
		Name:  upgrade.PhaseCerts,
		Short: "Renew kubeadm's certificates that expire within the renewal window and restart the components that read them at start, one at a time",
		Class: errclass.HostPreparationFailed,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			if d.Upgrade == nil {
				return Result{}, errNoUpgrade
			}
			if d.DryRun {
				return Result{Message: "would renew the certificates that expire within " + RenewBefore(d.Config).String() +
					", then restart the control-plane components that read them at start, one at a time (each backed up, waited on, rolled back if unhealthy)"}, nil
			}
			lines, err := d.Upgrade.cluster().RenewCertificates(ctx, d)
			// A certificate that expires and could not be renewed (an
			// external CA's) is a warning, not a renewal.
			var renewed, expiring []string
			for _, l := range lines {
				if w, ok := strings.CutPrefix(l, day2.WarningPrefix); ok {
					expiring = append(expiring, w)
				} else {
					renewed = append(renewed, l)
				}
			}
			if err != nil {
				// The certificates renewed before the failure stay renewed;
				// the rerun resumes here and restarts the components.
				return Result{Changed: len(renewed) > 0, Changes: renewed, Warnings: expiring}, err
			}
			none := "no certificate expires within " + RenewBefore(d.Config).String()
			if len(expiring) > 0 {
				none = fmt.Sprintf("%d certificate(s) expire within %s and were not renewed (an external CA's)", len(expiring), RenewBefore(d.Config))
			}
			// A run that resumes here may have renewed certificates before
			// it stopped (killed, or failed after a renewal) and not
			// restarted the components that read them: they are restarted
			// where they do not run the certificates on disk yet. Any
			// other run that renewed nothing restarts only a static pod
			// whose manifest carries a digest of other certificates than
			// those on disk (renewed since it started: by a run of another
			// spec that was killed before the restart, or by hand), or,
			// on a Systemd control plane, a unit whose credential stamp
			// is not that of its files now (cpunits.CredentialsStale).
			onlyStale := len(renewed) == 0 && d.resumedAt != upgrade.PhaseCerts
			res := Result{Changed: len(renewed) > 0, Changes: renewed, Warnings: expiring}
			if len(renewed) == 0 {
				res.Message = none
			}
			for _, c := range upgrade.ControlPlaneComponents {
				var r Result
				var err error
				if systemd.SystemdRuntime(d.Config) && onlyStale {
					// A unit it cannot read is left as a run that renews
					// nothing left every unit before: a warning, not a
					// failure of an upgrade for what it did not change.
					stale, err := cpunits.CredentialsStale(d.Root, c)
					if err != nil {
						res.Warnings = append(res.Warnings, fmt.Sprintf("could not tell whether the credential files of %s changed since its unit was written (left as it is): %v", c, err))
					}
					if !stale {
						continue
					}
				}
				if systemd.SystemdRuntime(d.Config) {
					// The units read their certificates and kubeconfigs as
					// systemd credentials, copied when a unit starts: each is
					// replaced again where its credentials' stamp changed,
					// restarted and checked healthy, one at a time.
					r, err = controlPlaneUpgrader(machineadm.RuntimeSystemd).UpgradeComponent(ctx, d, c)
				} else {
					// A static pod reads its client certificates when it
					// starts: it is restarted with their digest annotated,
					// one at a time, each healthy before the next.
					r, err = d.Upgrade.cluster().RestartForCertificates(ctx, d, c, onlyStale)
					if err != nil && onlyStale && errors.Is(err, day2.ErrStalenessUnknown) {
						// As for a Systemd unit: a run that renews nothing
						// does not fail (leaving the node cordoned) for a
						// component it leaves as it is.
						res.Warnings = append(res.Warnings, fmt.Sprintf("%s (left as it is): %v", c, err))
						continue
					}
				}
				res.Changed = res.Changed || r.Changed
				res.Changes = append(res.Changes, r.Changes...)
				if err != nil {
					return res, certsRestartError(d, c, err)
				}
			}
			return res, nil
		},
	}
}

// certsRestartError is the error of certs-renew's restart of component
// when it was rolled back: the class stays RolledBack, the hint is not the
// class's (or the unit upgrader's), which tell to fix the component's
// settings in the spec. Here no setting changed: the component was
// restarted on its renewed certificates only, and the renewal is not
// undone by the rollback (the previous manifest or unit reads the renewed
// files when it starts). Any other error is returned as it is.
func certsRestartError(d *Data, component string, err error) error {
	if class, _ := errclass.Of(err); class != errclass.RolledBack {
		return err
	}
	log := "`crictl ps -a`, `crictl logs`"
	if systemd.SystemdRuntime(d.Config) {
		log = "`journalctl -u " + component + "`"
	}
	return errclass.New(errclass.RolledBack, component+" did not become healthy when restarted on its renewed certificates, and its previous "+
		"manifest or unit was put back; no setting changed, and the certificates stay renewed (it reads them at its next start too): read its log ("+log+
		"), check the renewed certificates and the kubeconfig files under /etc/kubernetes against the cluster's CA (`machineadm certs check-expiration`), "+
		"then run `machineadm upgrade` again with the same spec: it resumes at certs-renew and restarts the component again.", err)
}

// recordSpecPhase records the new spec as the node's applied spec.
func recordSpecPhase() Phase {
	return Phase{
		Name:      upgrade.PhaseRecord,
		Short:     "Record the new spec as the node's applied spec (secrets withheld)",
		Class:     errclass.HostPreparationFailed,
		Completes: true,
		Run: func(ctx context.Context, d *Data) (Result, error) {
			if d.Upgrade == nil || d.Upgrade.Record == nil {
				return Result{}, errNoUpgrade
			}
			if len(d.skipped) > 0 {
				// The node does not run the whole new spec: the record
				// keeps the old one, so the next run plans the same change
				// and, without --skip-phases, runs what was skipped. A dry
				// run says so too.
				msg := "not recorded: "
				if d.DryRun {
					msg = "would not record the spec: "
				}
				return Result{Message: msg + strings.Join(d.skipped, ", ") + " skipped by --skip-phases; run again without it to finish the upgrade"}, nil
			}
			if d.DryRun {
				return Result{Message: "would record the spec in " + upgrade.RecordFile}, nil
			}
			changed, err := RecordApplied(d, d.Upgrade.Record.Key, d.Upgrade.SpecDigest, "upgrade")
			if err != nil {
				return Result{}, err
			}
			return Result{Changed: changed, Message: "recorded in " + upgrade.RecordFile}, nil
		},
	}
}
