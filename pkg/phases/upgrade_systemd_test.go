package phases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/upgrade"
	"github.com/machineadm/machineadm/pkg/version"
)

// The Systemd runtime's control plane has its upgrader in every build.
func TestSystemdControlPlaneUpgraderRegistered(t *testing.T) {
	if _, ok := controlPlaneUpgrader(machineadm.RuntimeSystemd).(systemdUpgrader); !ok {
		t.Errorf("the Systemd runtime's upgrader is %T", controlPlaneUpgrader(machineadm.RuntimeSystemd))
	}
}

// kubeadm's upgrade preflight does not look for static pod manifests on a
// Systemd control plane; it does on static pods.
func TestSystemdIgnoredUpgradeChecks(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeSystemd}}}
	if got := systemdIgnoredUpgradeChecks(cfg); len(got) != 1 || got[0] != "StaticPodManifest" {
		t.Errorf("Systemd: %q", got)
	}
	cfg.Spec.ControlPlane.Runtime = machineadm.RuntimeStaticPods
	if got := systemdIgnoredUpgradeChecks(cfg); len(got) != 0 {
		t.Errorf("static pods: %q", got)
	}
}

// recordingUpgrader records the components it is asked to replace and
// fails fail.
type recordingUpgrader struct {
	got  []string
	fail string
}

func (r *recordingUpgrader) UpgradeComponent(_ context.Context, _ *Data, c string) (Result, error) {
	r.got = append(r.got, c)
	if c == r.fail {
		return Result{Changed: true}, errclass.New(errclass.RolledBack, "", errors.New(c+" rolled back"))
	}
	return Result{Changed: true, Changes: []string{"replaced " + c}}, nil
}

// On a Systemd control plane kubeadm's control-plane phase of a version
// upgrade replaces the units in kubeadm's order, one at a time, through
// the runtime's upgrader, and stops at the first that fails; kubeadm's
// own control-plane phase (static pod manifests) does not run.
func TestKubeadmControlPlaneOnSystemdReplacesTheUnits(t *testing.T) {
	old := controlPlaneUpgrader(machineadm.RuntimeSystemd)
	defer RegisterControlPlaneUpgrader(machineadm.RuntimeSystemd, old)
	rec := &recordingUpgrader{}
	RegisterControlPlaneUpgrader(machineadm.RuntimeSystemd, rec)
	fc := &fakeCluster{}
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
		ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeSystemd}}}
	d := &Data{Config: cfg, Upgrade: &UpgradeRun{Cluster: fc, Plan: &upgrade.Plan{From: "v1.36.3", To: "v1.37.2", Steps: []upgrade.Step{{Phase: upgrade.PhaseKubeadm}}}}}
	leaf := kubeadmUpgradeLeaf(cfg, KubeadmUpgradePhase{Name: "control-plane", Class: errclass.ControlPlaneUnhealthy})
	r, err := leaf.Run(context.Background(), d)
	if err != nil || !r.Changed {
		t.Fatalf("result %+v, %v", r, err)
	}
	if !reflect.DeepEqual(rec.got, upgrade.ControlPlaneComponents) {
		t.Errorf("replaced %v, want %v", rec.got, upgrade.ControlPlaneComponents)
	}
	if len(fc.calls) != 0 {
		t.Errorf("kubeadm's own phase ran: %v", fc.calls)
	}
	rec.got, rec.fail = nil, upgrade.ComponentAPIServer
	if _, err := leaf.Run(context.Background(), d); func() errclass.Class { c, _ := errclass.Of(err); return c }() != errclass.RolledBack {
		t.Errorf("a rolled-back unit: %v", err)
	}
	if want := upgrade.ControlPlaneComponents[:2]; !reflect.DeepEqual(rec.got, want) {
		t.Errorf("after a failure replaced %v, want %v", rec.got, want)
	}
}

// After a certificate renewal the control-plane components are restarted
// on the renewed certificates, in kubeadm's order: a Systemd control
// plane's units read them as systemd credentials, which systemd copies
// only when a unit starts (the unit's credential stamp changed with the
// files); a static pod reads its client certificates when it starts
// (RestartForCertificates). Not when nothing was renewed, unless the run
// resumes at certs-renew: the run it resumes may have renewed them and
// stopped before the restarts; but then a static pod whose manifest
// carries the digest of other certificates is still restarted (onlyStale:
// renewed by a killed run of another spec, or by hand). A failed restart
// stops the phase there.
func TestCertsRenewRestartsComponents(t *testing.T) {
	old := controlPlaneUpgrader(machineadm.RuntimeSystemd)
	defer RegisterControlPlaneUpgrader(machineadm.RuntimeSystemd, old)
	rec := &recordingUpgrader{}
	RegisterControlPlaneUpgrader(machineadm.RuntimeSystemd, rec)
	var restarts, stale []string
	for _, c := range upgrade.ControlPlaneComponents {
		restarts = append(restarts, "restart "+c)
		stale = append(stale, "restart stale "+c)
	}
	for _, tc := range []struct {
		name         string
		rt           machineadm.ControlPlaneRuntime
		renewed      []string
		resumed      bool
		restartFail  string
		wantUnits    []string
		wantRestarts []string
		wantErr      bool
	}{
		{name: "systemd renewed", rt: machineadm.RuntimeSystemd, renewed: []string{"renewed apiserver"}, wantUnits: upgrade.ControlPlaneComponents},
		{name: "systemd nothing renewed", rt: machineadm.RuntimeSystemd},
		{name: "systemd resumed", rt: machineadm.RuntimeSystemd, resumed: true, wantUnits: upgrade.ControlPlaneComponents},
		{name: "static pods renewed", rt: machineadm.RuntimeStaticPods, renewed: []string{"renewed apiserver"}, wantRestarts: restarts},
		{name: "static pods nothing renewed", rt: machineadm.RuntimeStaticPods, wantRestarts: stale},
		{name: "static pods resumed", rt: machineadm.RuntimeStaticPods, resumed: true, wantRestarts: restarts},
		{name: "static pods restart fails", rt: machineadm.RuntimeStaticPods, renewed: []string{"renewed apiserver"}, restartFail: upgrade.ComponentAPIServer, wantRestarts: restarts[:2], wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.got = nil
			cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
				ControlPlane: &machineadm.ControlPlane{Runtime: tc.rt}}}
			fc := &fakeCluster{renewed: tc.renewed, restartFail: tc.restartFail}
			d := &Data{Config: cfg, Upgrade: &UpgradeRun{Cluster: fc}}
			if tc.resumed {
				d.resumedAt = upgrade.PhaseCerts
			}
			r, err := certsRenewPhase().Run(context.Background(), d)
			if (err != nil) != tc.wantErr {
				t.Fatalf("certs-renew: %v, want error %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(rec.got, tc.wantUnits) {
				t.Errorf("replaced units %v, want %v (%+v)", rec.got, tc.wantUnits, r)
			}
			restarted := slices.DeleteFunc(fc.calls, func(c string) bool { return c == "certs" })
			if len(restarted) != len(tc.wantRestarts) || (len(restarted) > 0 && !reflect.DeepEqual(restarted, tc.wantRestarts)) {
				t.Errorf("static pods %v, want %v (%+v)", restarted, tc.wantRestarts, r)
			}
			if tc.wantRestarts != nil && (tc.renewed != nil || tc.resumed) && !tc.wantErr && (!r.Changed || !slices.Contains(r.Changes, "kube-scheduler restarted")) {
				t.Errorf("result %+v: want the restarts among its changes", r)
			}
			if tc.renewed == nil && !tc.resumed && r.Changed {
				t.Errorf("nothing renewed, not resumed: %+v, want unchanged", r)
			}
		})
	}
}

// A renewal that fails after it renewed some certificates says which
// (the changes printed beside the error), not that no certificate
// expires: they stay renewed.
func TestCertsRenewFailureKeepsTheRenewed(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
		ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeStaticPods}}}
	renewed := []string{"renewed apiserver (expired 2026-12-10T00:00:00Z, now 2027-12-07T00:00:00Z)"}
	failure := errors.New("renewing front-proxy-client: no space left on device")
	d := &Data{Config: cfg, Upgrade: &UpgradeRun{Cluster: &fakeCluster{renewed: renewed, renewErr: failure}}}
	r, err := certsRenewPhase().Run(context.Background(), d)
	if !errors.Is(err, failure) {
		t.Fatalf("certs-renew: %v, want %v", err, failure)
	}
	if !r.Changed || !reflect.DeepEqual(r.Changes, renewed) || strings.Contains(r.Summary(), "no certificate expires") {
		t.Errorf("certs-renew that renewed one certificate and failed: %+v (%q), want changed with %q", r, r.Summary(), renewed)
	}
}

// A dry run on the first control plane says, for either runtime, that the
// spec's settings would be stored in kubeadm-config after the components
// (the control-plane sub-phase) or the units of a version upgrade
// (kubeadm's control-plane position on a Systemd control plane); on any
// other control plane it does not, as nothing is stored there.
func TestDryRunSaysSettingsWouldBeStored(t *testing.T) {
	for _, tc := range []struct {
		rt     machineadm.ControlPlaneRuntime
		action machineadm.Action
		want   bool
	}{
		{machineadm.RuntimeSystemd, machineadm.ActionInit, true},
		{machineadm.RuntimeStaticPods, machineadm.ActionInit, true},
		{machineadm.RuntimeSystemd, machineadm.ActionJoin, false},
	} {
		cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: tc.action,
			ControlPlane: &machineadm.ControlPlane{Runtime: tc.rt}}}
		plan := &upgrade.Plan{From: "v1.36.3", To: "v1.37.2", Steps: []upgrade.Step{
			{Phase: upgrade.PhaseKubeadm},
			{Phase: upgrade.PhaseControlPlane, Components: []string{upgrade.ComponentScheduler}},
		}}
		d := &Data{Config: cfg, DryRun: true, Upgrade: &UpgradeRun{Cluster: &fakeCluster{}, Plan: plan}}
		var sub Phase
		for _, p := range controlPlanePhase().Phases {
			if p.Name == upgrade.ComponentScheduler {
				sub = p
			}
		}
		runs := map[string]func() (Result, error){"control-plane/" + upgrade.ComponentScheduler: func() (Result, error) { return sub.Run(context.Background(), d) }}
		if tc.rt == machineadm.RuntimeSystemd {
			runs["kubeadm-upgrade/control-plane"] = func() (Result, error) { return upgradeSystemdUnits(context.Background(), d) }
		}
		for name, run := range runs {
			r, err := run()
			if err != nil {
				t.Fatalf("%s %s %s: %v", tc.rt, tc.action, name, err)
			}
			if got := slices.Contains(r.Changes, storeSettingsPlan); got != tc.want {
				t.Errorf("%s %s %s: plan %q; says it would store the settings: %t, want %t", tc.rt, tc.action, name, r.Changes, got, tc.want)
			}
		}
	}
}

// A dry run of certs-renew says it would restart the components after a
// renewal, as the real run does, and calls nothing.
func TestCertsRenewDryRunSaysRestart(t *testing.T) {
	for _, rt := range []machineadm.ControlPlaneRuntime{machineadm.RuntimeStaticPods, machineadm.RuntimeSystemd} {
		cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
			ControlPlane: &machineadm.ControlPlane{Runtime: rt}}}
		fc := &fakeCluster{renewed: []string{"renewed apiserver"}}
		d := &Data{Config: cfg, DryRun: true, Upgrade: &UpgradeRun{Cluster: fc}}
		r, err := certsRenewPhase().Run(context.Background(), d)
		if err != nil || len(fc.calls) != 0 {
			t.Fatalf("%s: %v, calls %v", rt, err, fc.calls)
		}
		if !strings.Contains(r.Message, "would renew") || !strings.Contains(r.Message, "restart") {
			t.Errorf("%s: dry run says %q, want the renewal and the restarts", rt, r.Message)
		}
	}
}

// A restart of certs-renew that is rolled back stays RolledBack, but its
// hint is about the renewed certificates, for either runtime: not the
// class's or the unit upgrader's, which tell to fix the component's
// settings in the spec (certs-renew changed none), and it says a rerun
// with the same spec resumes there.
func TestCertsRenewRolledBackHint(t *testing.T) {
	old := controlPlaneUpgrader(machineadm.RuntimeSystemd)
	defer RegisterControlPlaneUpgrader(machineadm.RuntimeSystemd, old)
	rec := &recordingUpgrader{fail: upgrade.ComponentScheduler}
	RegisterControlPlaneUpgrader(machineadm.RuntimeSystemd, rec)
	for _, rt := range []machineadm.ControlPlaneRuntime{machineadm.RuntimeStaticPods, machineadm.RuntimeSystemd} {
		cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
			ControlPlane: &machineadm.ControlPlane{Runtime: rt}}}
		fc := &fakeCluster{renewed: []string{"renewed scheduler.conf"}, restartFail: upgrade.ComponentScheduler}
		d := &Data{Config: cfg, Upgrade: &UpgradeRun{Cluster: fc}}
		_, err := certsRenewPhase().Run(context.Background(), d)
		class, hint := errclass.Of(err)
		if class != errclass.RolledBack || !strings.Contains(err.Error(), "did not become healthy") && !strings.Contains(err.Error(), "rolled back") {
			t.Errorf("%s: %v (%s), want the rollback, class RolledBack", rt, err, class)
		}
		if !strings.Contains(hint, "renewed certificates") || !strings.Contains(hint, "same spec") || !strings.Contains(hint, upgrade.ComponentScheduler) ||
			strings.Contains(hint, "settings in the spec") {
			t.Errorf("%s: hint %q, want one about the scheduler's renewed certificates and a rerun of the same spec", rt, hint)
		}
	}
}

// A renewed certificate's line says it expired only when its former
// expiry was past: one renewed within the window, before it expires, was
// to expire then.
func TestRenewedLineSaysExpiredOnlyWhenPast(t *testing.T) {
	now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	after := now.AddDate(1, 0, 0)
	if got := renewedLine(day2.Renewed{Name: "apiserver", Before: now.AddDate(0, 0, 3), After: after}, now); strings.Contains(got, "expired") ||
		!strings.Contains(got, "was to expire 2026-12-10T00:00:00Z") || !strings.Contains(got, "now expires 2027-12-07T00:00:00Z") {
		t.Errorf("renewed 3 days before its expiry: %q", got)
	}
	if got := renewedLine(day2.Renewed{Name: "apiserver", Before: now.AddDate(0, 0, -1), After: after}, now); !strings.Contains(got, "expired 2026-12-06T00:00:00Z") {
		t.Errorf("renewed a day after its expiry: %q", got)
	}
}

// An upgrade's units on a Systemd control plane are derived without the
// secrets only a bootstrap consumes (the certificate key, the bootstrap
// tokens, a join's token): their files may be gone by now, as upgrade's
// inputs-check does not read them either. Here none was delivered; the
// dry run of the scheduler's replacement (certs-renew's and
// control-plane's) plans the unit instead of failing PayloadUnavailable
// on the certificate key's file.
func TestSystemdUpgradeNeedsNoBootstrapSecrets(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	l := loadExample(t, "control-plane-systemd.yaml")
	d := testData(t)
	d.Config, d.Root, d.DryRun = l.Config, t.TempDir(), true
	d.Upgrade = &UpgradeRun{Cluster: &fakeCluster{}, Plan: &upgrade.Plan{From: "v1.37.2", To: "v1.37.2"}}
	r, err := systemdUpgrader{}.UpgradeComponent(context.Background(), d, upgrade.ComponentScheduler)
	if err != nil {
		t.Fatalf("the scheduler's unit without the bootstrap's secret files: %v", err)
	}
	if !strings.Contains(strings.Join(r.Changes, "\n"), "kube-scheduler.service") {
		t.Errorf("the dry run's plan does not name the scheduler's unit: %q", r.Changes)
	}
}

// A certificate that expires within the window and could not be renewed
// (its CA has no key on the node: an external CA) is a warning of
// certs-renew, which then does not say that no certificate expires, nor
// counts it as renewed (no restart for it).
func TestCertsRenewSaysWhatItCouldNotRenew(t *testing.T) {
	now := time.Now()
	ext := renewedLine(day2.Renewed{Name: "apiserver", Before: now.Add(72 * time.Hour), External: true}, now)
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
		ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeStaticPods}}}
	fc := &fakeCluster{renewed: []string{ext}}
	d := &Data{Config: cfg, Upgrade: &UpgradeRun{Cluster: fc}}
	r, err := certsRenewPhase().Run(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if r.Changed || strings.Contains(r.Summary(), "no certificate expires") || len(r.Warnings) != 1 ||
		!strings.Contains(r.Warnings[0], "apiserver expires") || !strings.Contains(r.Warnings[0], "external CA") {
		t.Errorf("an expiring certificate of an external CA: %+v (%q); want a warning naming it, unchanged", r, r.Summary())
	}
	for _, c := range fc.calls {
		if strings.HasPrefix(c, "restart ") && !strings.HasPrefix(c, "restart stale ") {
			t.Errorf("restarted for a certificate not renewed: %v", fc.calls)
		}
	}
}

// A run that renews nothing and does not resume at certs-renew still
// replaces, on a Systemd control plane, a unit whose credential files were
// rewritten after it (renewed by hand, or by a killed run of another
// spec, which a new spec does not resume): systemd handed the process a
// copy at its start, about to expire. The units whose stamp is that of
// their files now, and components without a unit, are left alone.
func TestCertsRenewReplacesSystemdUnitsOnStaleCredentials(t *testing.T) {
	old := controlPlaneUpgrader(machineadm.RuntimeSystemd)
	defer RegisterControlPlaneUpgrader(machineadm.RuntimeSystemd, old)
	rec := &recordingUpgrader{}
	RegisterControlPlaneUpgrader(machineadm.RuntimeSystemd, rec)
	root := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{upgrade.ComponentAPIServer, upgrade.ComponentScheduler} {
		kc := "/etc/kubernetes/" + c + ".conf"
		write(kc, "client certificate 1")
		u, err := cpunits.StampCredentials(root, cpunits.Component{Name: c, Description: c, Command: []string{"/usr/local/bin/" + c, "--kubeconfig=" + kc},
			User: "u", Group: "u", Credentials: []cpunits.Credential{{ID: "kubeconfig", Path: kc}}})
		if err != nil {
			t.Fatal(err)
		}
		files, err := cpunits.Render(u)
		if err != nil {
			t.Fatal(err)
		}
		write(files[0].Path, string(files[0].Content))
	}
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
		ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeSystemd}}}
	d := &Data{Config: cfg, Root: root, Upgrade: &UpgradeRun{Cluster: &fakeCluster{}}}
	if r, err := certsRenewPhase().Run(context.Background(), d); err != nil || len(rec.got) != 0 || r.Changed {
		t.Fatalf("credentials as the units were stamped: %+v, %v, replaced %v; want nothing", r, err, rec.got)
	}
	write("/etc/kubernetes/"+upgrade.ComponentScheduler+".conf", "client certificate 2")
	r, err := certsRenewPhase().Run(context.Background(), d)
	if err != nil || !reflect.DeepEqual(rec.got, []string{upgrade.ComponentScheduler}) || !r.Changed {
		t.Errorf("the scheduler's kubeconfig rewritten: %+v, %v, replaced %v; want the scheduler's unit", r, err, rec.got)
	}
	// A unit that cannot be read (not a regular file) is a warning: the
	// run changes nothing for it and does not fail.
	rec.got = nil
	hp := filepath.Join(root, "etc/systemd/system", upgrade.ComponentScheduler+".service")
	if err := os.Remove(hp); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(hp, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err = certsRenewPhase().Run(context.Background(), d)
	if err != nil || len(rec.got) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], upgrade.ComponentScheduler) {
		t.Errorf("an unreadable unit: %+v, %v, replaced %v; want a warning naming it", r, err, rec.got)
	}
}

// A run that renews nothing does not fail (which would leave the node
// cordoned) because it could not tell whether a static pod runs the
// certificates on disk (day2.ErrStalenessUnknown: a manifest or a
// kubeconfig that does not read): a warning per component, nothing
// changed. A run that resumes at certs-renew still fails on it.
func TestCertsRenewStalenessUnknownIsAWarning(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: machineadm.RoleControlPlane, Action: machineadm.ActionInit,
		ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeStaticPods}}}
	unknown := errclass.New(errclass.HostPreparationFailed, "", fmt.Errorf("%w: reading /etc/kubernetes/scheduler.conf: bad", day2.ErrStalenessUnknown))
	fc := &fakeCluster{staleErr: unknown}
	d := &Data{Config: cfg, Upgrade: &UpgradeRun{Cluster: fc}}
	r, err := certsRenewPhase().Run(context.Background(), d)
	if err != nil || r.Changed || len(r.Warnings) != len(upgrade.ControlPlaneComponents) || !strings.Contains(r.Warnings[0], "scheduler.conf") {
		t.Errorf("nothing renewed, staleness unknown: %+v, %v; want a warning per component and no failure", r, err)
	}
	fc.staleErr = errclass.New(errclass.RolledBack, "", errors.New("kube-scheduler did not become healthy"))
	if _, err := certsRenewPhase().Run(context.Background(), d); err == nil {
		t.Error("nothing renewed, a stale restart rolled back: no error")
	}
}
