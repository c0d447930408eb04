package systemd

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	clientset "k8s.io/client-go/kubernetes"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	controlplanephase "k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/host/service"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/cpcheck"
)

// SystemdUpgrade moves the running control-plane units of the Systemd
// runtime to the spec being applied by `machineadm upgrade`: a new
// Kubernetes version (new binaries under spec.controlPlane.binaries,
// delivered by the image or by spec.host.files with their sha256, and
// kubeadm's flags of the new version) or changed component settings.
type SystemdUpgrade struct {
	// Env is the run's Systemd environment; its Config and Docs are the
	// new spec's. Required.
	Env *SystemdEnv
	// BackupDir is the machine path of the units' backups. Default
	// cpunits.DefaultBackupDir.
	BackupDir string
	// Healthy, when set, replaces the health checks (tests): it waits
	// until the component (kubeadm's name: "etcd", "kube-apiserver", ...)
	// is healthy.
	Healthy func(ctx context.Context, component string) error
	// StableFor is how long a restarted unit's health checks must pass in
	// a row before it counts as healthy. Default cpcheck.UnitStableFor
	// (4 s), as day2's WaitLocalControlPlane holds units to.
	StableFor time.Duration
}

// SystemdUpgradeResult is what the upgrade did, one entry per unit in the
// order they were handled.
type SystemdUpgradeResult struct {
	// Units are the per-unit results (cpunits.Replace).
	Units []cpunits.ReplaceResult
}

// Changed lists the units that were replaced (or would be, in a dry run).
func (r *SystemdUpgradeResult) Changed() []string {
	var out []string
	for _, u := range r.Units {
		if u.Changed {
			out = append(out, u.Unit)
		}
	}
	return out
}

// components derives the new units in kubeadm's upgrade order: etcd (when
// local), kube-apiserver, kube-controller-manager, kube-scheduler. The
// configuration is the run's (the new spec's on the node that initialised
// the cluster, the cluster's kubeadm-config on the others, as kubeadm's
// upgrade node reads it), at the spec's Kubernetes version. etcd keeps the
// member list and cluster state of its installed unit: they only matter
// when a member first starts, and kubeadm's upgrade keeps them too.
func (u *SystemdUpgrade) components() (*SystemdControlPlane, []cpunits.Component, error) {
	env := u.Env
	s, err := env.controlPlane()
	if err != nil {
		return nil, nil, err
	}
	if v := env.Config.Spec.Kubernetes.Version; v != "" {
		s.cfg.KubernetesVersion = v
	}
	var comps []cpunits.Component
	if s.LocalEtcd() {
		members, err := installedEtcdMembers(env.Root)
		if err != nil {
			return nil, nil, err
		}
		c, err := s.EtcdComponent(members)
		if err != nil {
			return nil, nil, err
		}
		comps = append(comps, c)
	}
	cps, err := s.ControlPlaneComponents()
	if err != nil {
		return nil, nil, err
	}
	return s, append(comps, cps...), nil
}

// installedEtcdMembers reads --initial-cluster of the installed etcd unit
// when it also has --initial-cluster-state=existing (a member that
// joined); nil otherwise (the first member, whose unit kubeadm derives
// without a member list).
func installedEtcdMembers(root string) ([]EtcdMember, error) {
	content, err := cpunits.InstalledUnit(root, kubeadmconstants.Etcd+".service")
	if err != nil || content == nil {
		return nil, err
	}
	args := unitArgs(string(content))
	if args["initial-cluster-state"] != "existing" {
		return nil, nil
	}
	var members []EtcdMember
	for _, m := range strings.Split(args["initial-cluster"], ",") {
		name, url, ok := strings.Cut(m, "=")
		if !ok {
			return nil, fmt.Errorf("%s: --initial-cluster entry %q is not NAME=URL", path.Join(cpunits.UnitDir, kubeadmconstants.Etcd+".service"), m)
		}
		members = append(members, EtcdMember{Name: name, PeerURL: url})
	}
	return members, nil
}

// unitArgs collects the "--name=value" words of a unit's ExecStart
// (cpunits.Render writes one argument a line).
func unitArgs(unit string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(unit, "\n") {
		l = strings.TrimSuffix(strings.TrimSpace(l), `\`)
		l = strings.TrimSpace(strings.TrimPrefix(l, "ExecStart="))
		if name, val, ok := strings.Cut(strings.TrimPrefix(l, "--"), "="); ok && strings.HasPrefix(l, "--") {
			out[name] = strings.Trim(val, `"`)
		}
	}
	return out
}

// Backup takes the backup of every installed unit (its unit file,
// environment file and the binary it runs) that has no pending one. Call
// it before the files phase of the upgrade replaces binaries in place, so
// a rollback can put the old binary back; Run takes any backup still
// missing itself. A dry run takes none.
func (u *SystemdUpgrade) Backup(ctx context.Context) error {
	if u.Env.DryRun {
		return nil
	}
	_, comps, err := u.components()
	if err != nil {
		return err
	}
	for _, c := range comps {
		hp, err := files.Resolve(u.Env.Root, c.UnitPath())
		if err != nil {
			return err
		}
		if st, err := files.ReadState(hp); err != nil || !st.Exists {
			continue // not installed: nothing to keep
		}
		took, err := cpunits.Backup(u.Env.Root, u.BackupDir, c)
		if err != nil {
			return err
		}
		if took {
			fmt.Fprintf(u.Env.out(), "[systemd] backed up %s before the upgrade\n", c.Unit())
		}
	}
	return nil
}

// Run replaces the units one at a time in kubeadm's order (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler), as Component
// does for each, and stops at the first that fails; the units after it
// are left as they were. In a dry run it plans the changes (unit diffs to
// Out, lines in Env.Plan) and touches nothing.
func (u *SystemdUpgrade) Run(ctx context.Context) (*SystemdUpgradeResult, error) {
	s, comps, err := u.prepare()
	if err != nil {
		return nil, err
	}
	res := &SystemdUpgradeResult{}
	for _, c := range comps {
		r, err := u.replace(ctx, s, c)
		res.Units = append(res.Units, r)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// Component replaces one unit, by kubeadm's component name ("etcd",
// "kube-apiserver", "kube-controller-manager", "kube-scheduler"; the
// upgrade plan's control-plane sub-phases): a changed one is backed up,
// rewritten, restarted and checked healthy (etcd's /readyz; kubeadm's
// waiter on the three components' health endpoints, and the API server's
// /version at the spec's version), at each check over StableFor and
// without systemd restarting it meanwhile (healthy); one that is not
// healthy is rolled back to its backup and the error says so. An unchanged unit is only started,
// so a rerun after success changes nothing, and a rerun after a kill
// finishes the unit it was in (its backup kept). etcd with an external
// etcd does nothing.
func (u *SystemdUpgrade) Component(ctx context.Context, name string) (cpunits.ReplaceResult, error) {
	s, comps, err := u.prepare()
	if err != nil {
		return cpunits.ReplaceResult{}, err
	}
	for _, c := range comps {
		if c.Name == name {
			return u.replace(ctx, s, c)
		}
	}
	if name == kubeadmconstants.Etcd && !s.LocalEtcd() {
		return cpunits.ReplaceResult{Unit: name + ".service"}, nil
	}
	return cpunits.ReplaceResult{}, fmt.Errorf("unknown control-plane component %q (want etcd or one of %s)", name, strings.Join(kubeadmconstants.ControlPlaneComponents, ", "))
}

func (u *SystemdUpgrade) prepare() (*SystemdControlPlane, []cpunits.Component, error) {
	if err := u.Env.check(); err != nil {
		return nil, nil, err
	}
	return u.components()
}

// replace runs cpunits.Replace for c and prints or plans its changes.
func (u *SystemdUpgrade) replace(ctx context.Context, s *SystemdControlPlane, c cpunits.Component) (cpunits.ReplaceResult, error) {
	env := u.Env
	start := time.Now()
	opts := cpunits.ReplaceOptions{Root: env.Root, BackupDir: u.BackupDir, DryRun: env.DryRun, Out: env.out()}
	rules := s.pathRules(c)
	if !env.DryRun {
		opts.Manager = env.Services
		opts.Healthy = func(ctx context.Context) error { return u.healthy(ctx, s, c.Name) }
		opts.BeforeStart = func(ctx context.Context, rollback bool) error {
			return u.beforeStart(ctx, s, c, rules, rollback)
		}
	}
	r, err := cpunits.Replace(ctx, c, opts)
	if err == nil {
		// Once the unit reads its files as credentials and is healthy, the
		// files an older machineadm gave its account go back to root (a
		// rollback before this point finds them as the old unit needs).
		var perr error
		if !env.DryRun {
			_, perr = cpunits.CreateUsers(ctx, env.Root, cpunits.Accounts(s.LocalEtcd()), env.Exec, false)
		}
		var opened map[string]bool
		if perr == nil {
			opened, perr = openedDirectly(env.Root, c.Name)
		}
		if perr == nil {
			// A file another installed unit still opens itself (an older
			// machineadm's unit, not replaced yet: sa.key, which the
			// controller manager shares with the API server) keeps the
			// owner and mode that unit needs until it is replaced too.
			rules = slices.DeleteFunc(slices.Clone(rules), func(r cpunits.PathRule) bool { return !r.Dir && opened[r.Path] })
			var changes []string
			changes, perr = cpunits.ApplyPaths(env.Root, rules, env.DryRun)
			r.Changes = append(r.Changes, changes...)
		}
		if perr != nil {
			err = fmt.Errorf("setting owners and modes for %s: %w", c.Unit(), perr)
		}
	}
	for _, l := range r.Changes {
		if env.DryRun {
			if pl, ok := planLine(l); ok {
				l = pl
			}
			env.planned(l)
			continue
		}
		fmt.Fprintln(env.out(), "[systemd] "+l)
	}
	env.log().Info("control-plane unit upgrade", "unit", c.Unit(), "changed", r.Changed, "rolledBack", r.RolledBack,
		"dryRun", env.DryRun, "duration", time.Since(start), "error", err)
	if err != nil {
		return r, fmt.Errorf("upgrading %s (journalctl -u %s): %w", c.Unit(), c.Name, err)
	}
	return r, nil
}

// pathRules are the owners and modes of the files c reads as credentials
// and of the directories it writes (EtcdPathRules, ControlPlanePathRules
// narrowed to c), with the directories on the way; a missing file is
// skipped.
func (s *SystemdControlPlane) pathRules(c cpunits.Component) []cpunits.PathRule {
	all := s.ControlPlanePathRules([]cpunits.Component{c})
	if c.Name == kubeadmconstants.Etcd {
		all = s.EtcdPathRules(c)
	}
	mine := map[string]bool{}
	for _, cr := range c.Credentials {
		mine[cr.Path] = true
	}
	var out []cpunits.PathRule
	for _, r := range all {
		if r.Dir || mine[r.Path] {
			// A missing file is the unit's to report (it does not start).
			r.Optional = !r.Dir
			out = append(out, r)
		}
	}
	return out
}

// beforeStart prepares the host for the unit about to start in an
// upgrade: the accounts (etcd's is "etcd" since units read credentials;
// an older machineadm ran etcd as kubeadm-etcd) and the owners of the
// directories the unit writes, recursively for etcd's data directory. On
// a rollback the directories go back to the account of the restored unit
// (its User=, read once the backup is back in place: a run killed after
// it wrote the new unit leaves that one installed for the rerun), when it
// differs.
func (u *SystemdUpgrade) beforeStart(ctx context.Context, s *SystemdControlPlane, c cpunits.Component, rules []cpunits.PathRule, rollback bool) error {
	var oldUser string
	if rollback {
		var err error
		if oldUser, err = installedUser(u.Env.Root, c); err != nil {
			return err
		}
	}
	var dirs []cpunits.PathRule
	for _, r := range rules {
		if r.Dir && r.User == c.User {
			if rollback {
				if oldUser == "" || oldUser == c.User {
					continue
				}
				r.User, r.Group = oldUser, oldUser
			}
			dirs = append(dirs, r)
		}
	}
	if !rollback {
		if _, err := cpunits.CreateUsers(ctx, u.Env.Root, cpunits.Accounts(s.LocalEtcd()), u.Env.Exec, false); err != nil {
			return fmt.Errorf("creating the control-plane accounts: %w", err)
		}
	}
	changes, err := cpunits.ApplyPaths(u.Env.Root, dirs, false)
	for _, l := range changes {
		fmt.Fprintln(u.Env.out(), "[systemd] "+l)
	}
	return err
}

// openedDirectly are the machine paths that the installed units of the
// control plane other than except name as a "--flag=path" argument, so
// that the process opens them itself (a unit an older machineadm wrote,
// before credentials; a credential's argument reads "%d/ID" instead).
// Missing units name nothing.
func openedDirectly(root, except string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, name := range append([]string{kubeadmconstants.Etcd}, kubeadmconstants.ControlPlaneComponents...) {
		if name == except {
			continue
		}
		content, err := cpunits.InstalledUnit(root, name+".service")
		if err != nil {
			return nil, err
		}
		for _, l := range strings.Split(string(content), "\n") {
			l = strings.TrimSuffix(strings.TrimSpace(l), `\`)
			l = strings.TrimSpace(strings.TrimPrefix(l, "ExecStart="))
			if _, val, ok := strings.Cut(l, "="); ok && strings.HasPrefix(l, "--") {
				out[strings.Trim(val, `"`)] = true
			}
		}
	}
	return out, nil
}

// installedUser is the User= of c's installed unit, "" when it has none.
func installedUser(root string, c cpunits.Component) (string, error) {
	content, err := cpunits.InstalledUnit(root, c.Unit())
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(content), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "User="); ok {
			return v, nil
		}
	}
	return "", nil
}

// unitRunner is the part of a service manager that reads a unit's
// current run (service.Systemd); with a manager that lacks it, a health
// wait does not ask systemd whether the unit restarted.
type unitRunner interface {
	UnitRun(ctx context.Context, unit string) (service.UnitRun, error)
}

// healthy waits until component is healthy after its restart, and stays
// so: its health checks must pass in a row over u.StableFor (default
// cpcheck.UnitStableFor, 4 s), one every kubeadm retry interval (500 ms),
// each at its first try (for the API server, controller manager and
// scheduler, kubeadm's waiter on the three health endpoints returned
// within the retry interval; for etcd, one request to its /readyz); a
// failed check, or one that needed retries, starts the run again. A unit
// that answers once and then exits, which systemd restarts (Restart=),
// is thus not healthy. When the service manager can say (service.Systemd:
// UnitRun), the wait also ends at once, not healthy, when the unit is no
// longer active, was restarted by systemd or became active again since
// the wait began, and a healthy check that was slow (past the retry
// interval) after one at its first try continues the run: the process
// stayed, so it is a loaded machine or a slow etcd behind the API
// server's /livez, not a restart. The environment's timeout bounds the
// wait; then, for the API server, its /version must report the spec's
// version.
func (u *SystemdUpgrade) healthy(ctx context.Context, s *SystemdControlPlane, component string) error {
	if u.Healthy != nil {
		return u.Healthy(ctx, component)
	}
	env := u.Env
	timeout := env.timeout(s.cfg)
	wait := cpcheck.Stable{Timeout: timeout, CheckTimeout: cpcheck.CheckTimeout, For: u.stableFor()}
	var client clientset.Interface
	what := component
	if component == kubeadmconstants.Etcd {
		url, err := s.etcdProbeURL()
		if err != nil {
			return err
		}
		what = "etcd at " + url
		// One request, no retries: every answer is a first try.
		wait.Check = etcdCheck(url)
	} else {
		var err error
		if client, err = env.localClient(s); err != nil {
			return err
		}
		pods := controlplanephase.GetStaticPodSpecs(&s.cfg.ClusterConfiguration, &s.cfg.LocalAPIEndpoint, nil)
		podMap := map[string]*v1.Pod{}
		for _, name := range kubeadmconstants.ControlPlaneComponents {
			p := pods[name]
			podMap[name] = &p
		}
		address := s.cfg.LocalAPIEndpoint.AdvertiseAddress
		wait.Check = func(ctx context.Context, timeout time.Duration) error {
			return cpcheck.Check(ctx, client, podMap, address, timeout, nil)
		}
		wait.FirstTry = kubeadmconstants.KubernetesAPICallRetryInterval
		what = component + " (kubeadm's health checks of kube-apiserver, kube-controller-manager and kube-scheduler)"
	}
	unit := component + ".service"
	wait.Abort = u.restarted(ctx, unit)
	// systemd vouches that the process stayed: a slow answer does not
	// start the run again (cpcheck.Stable.Watched).
	wait.Watched = wait.Abort != nil
	fmt.Fprintf(env.out(), "[systemd] waiting until %s is healthy at each check over %s (up to %s)\n", what, wait.For, timeout)
	res, err := cpcheck.WaitStable(ctx, wait)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%s was not healthy at each check over %s within %s (%d checks): %w", component, wait.For, timeout, res.Checks, err)
	}
	fmt.Fprintf(env.out(), "[systemd] %s healthy %d times in a row over %s after %s\n", component, res.Streak, res.Span.Round(100*time.Millisecond), res.Took.Round(100*time.Millisecond))
	if component != kubeadmconstants.KubeAPIServer {
		return nil
	}
	return waitAPIServerVersion(ctx, client.Discovery().ServerVersion, &s.cfg.ClusterConfiguration, timeout)
}

// stableFor is u.StableFor or its default.
func (u *SystemdUpgrade) stableFor() time.Duration {
	if u.StableFor > 0 {
		return u.StableFor
	}
	return cpcheck.UnitStableFor
}

// restarted is the Abort of a health wait of unit: it reads the unit's
// run from the service manager now, and then after each check says
// whether systemd stopped or started it again since (service.UnitRun's
// Changed). nil when the manager cannot say or the first read fails (the
// health checks alone decide then); a later read that fails says
// cpcheck.ErrUnknown: the wait goes on, without counting a slow check.
func (u *SystemdUpgrade) restarted(ctx context.Context, unit string) func(context.Context) error {
	m, ok := u.Env.Services.(unitRunner)
	if !ok {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, cpcheck.AbortTimeout)
	first, err := m.UnitRun(rctx, unit)
	cancel()
	if err != nil {
		u.Env.log().Warn("reading the unit's state; the health checks alone decide", "unit", unit, "error", err)
		return nil
	}
	return func(ctx context.Context) error {
		now, err := m.UnitRun(ctx, unit)
		if err != nil {
			return fmt.Errorf("%w: reading %s from systemd: %w", cpcheck.ErrUnknown, unit, err)
		}
		if why := first.Changed(now); why != "" {
			return fmt.Errorf("%s did not stay up after its restart: %s", unit, why)
		}
		return nil
	}
}

// waitAPIServerVersion polls the local API server's /version until it
// reports the configuration's Kubernetes version, by major, minor and
// patch (a vendor's build suffix is not compared): the new binary runs,
// not an old process still answering. Bounded by timeout; polled every
// second.
func waitAPIServerVersion(ctx context.Context, get func() (*apimachineryversion.Info, error), cfg *kubeadmapi.ClusterConfiguration, timeout time.Duration) error {
	want, err := utilversion.ParseSemantic(cfg.KubernetesVersion)
	if err != nil {
		return fmt.Errorf("the configuration's Kubernetes version: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "nothing"
	for {
		v, err := get()
		if err == nil {
			last = v.GitVersion
			if got, perr := utilversion.ParseSemantic(v.GitVersion); perr == nil &&
				got.Major() == want.Major() && got.Minor() == want.Minor() && got.Patch() == want.Patch() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("the API server reports version " + last + ", want " + cfg.KubernetesVersion)
		case <-time.After(time.Second):
		}
	}
}
