package phases

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host"
	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/upgrade"
	"github.com/machineadm/machineadm/pkg/version"
)

// TestKubeadmUpgradePhasesAreKubeadms checks each phase the upgrade
// workflow lists is a phase of the embedded kubeadm's `upgrade apply` or
// `upgrade node`, so that a kubeadm bump that renames one fails here and
// not on a cluster.
func TestKubeadmUpgradePhasesAreKubeadms(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"apply", "node"} {
		phases := KubeadmUpgradePhases(verb)
		if len(phases) < 6 {
			t.Fatalf("%s: %d phases", verb, len(phases))
		}
		for _, p := range phases {
			if _, err := day2.PhaseArgs(verb, p.Name, "/c.yaml", nil); err != nil {
				t.Errorf("upgrade %s: %v", verb, err)
			}
		}
	}
}

// fakeCluster stands in for the cluster and kubeadm's upgrade (no cluster
// runs in unit tests): it records each call and fails the kubeadm phase
// named fail.
type fakeCluster struct {
	calls []string
	fail  string
	// renewed is what RenewCertificates reports renewed, renewErr its
	// error (nil: none).
	renewed  []string
	renewErr error
	// restartFail is the component whose RestartForCertificates fails.
	restartFail string
	// staleErr is the error of RestartForCertificates with onlyStale.
	staleErr error
}

func (f *fakeCluster) RestartForCertificates(_ context.Context, _ *Data, component string, onlyStale bool) (Result, error) {
	if onlyStale {
		f.calls = append(f.calls, "restart stale "+component)
		return Result{}, f.staleErr
	}
	f.calls = append(f.calls, "restart "+component)
	if component == f.restartFail {
		return Result{}, errclass.New(errclass.RolledBack, "", errors.New(component+" did not become healthy"))
	}
	return Result{Changed: true, Changes: []string{component + " restarted"}}, nil
}

func (f *fakeCluster) Drain(_ context.Context, kubeconfig, node string, _ time.Duration) ([]string, error) {
	f.calls = append(f.calls, "drain "+node)
	return []string{"drained"}, nil
}

func (f *fakeCluster) Uncordon(_ context.Context, _, node string) error {
	f.calls = append(f.calls, "uncordon "+node)
	return nil
}

func (f *fakeCluster) KubeadmPhase(_ context.Context, _ *Data, name string) error {
	f.calls = append(f.calls, "kubeadm "+name)
	if name == f.fail {
		return errclass.New(errclass.ControlPlaneUnhealthy, "", errors.New("kubeadm failed"))
	}
	return nil
}

func (f *fakeCluster) RestartKubelet(_ context.Context, _ *Data, node, v string) ([]string, error) {
	f.calls = append(f.calls, "kubelet "+v)
	return nil, nil
}

func (f *fakeCluster) RenewCertificates(context.Context, *Data) ([]string, error) {
	f.calls = append(f.calls, "certs")
	return f.renewed, f.renewErr
}

// upgradeWorker returns a worker spec at version and the Data of an
// upgrade to it from a record at from, with cluster as its cluster.
func upgradeWorker(t *testing.T, work, from, to string, cluster UpgradeCluster, skipDrain bool) (*Workflow, *Data) {
	t.Helper()
	spec := func(v string) *machineadm.MachineBootstrapConfig {
		c := &machineadm.MachineBootstrapConfig{APIVersion: machineadm.LatestAPIVersion, Kind: machineadm.Kind}
		c.Spec.Role, c.Spec.Action = machineadm.RoleWorker, machineadm.ActionJoin
		c.Spec.Kubernetes.Version = v
		c.Spec.Node.Name = "w1"
		return c
	}
	key, _ := upgrade.NewKey()
	rec, err := upgrade.NewRecord(spec(from), "sha256:old", "bootstrap", "test", key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Write(work); err != nil {
		t.Fatal(err)
	}
	cfg := spec(to)
	snap, _ := upgrade.Snapshot(cfg, key)
	p, err := upgrade.Compute(rec.Spec, snap, upgrade.Options{KubeadmVersion: "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	d := &Data{
		Config: cfg, WorkDir: work, Root: t.TempDir(), StateFile: upgrade.JournalFile,
		SpecDigest: upgrade.JournalKey(rec.SpecDigest, "sha256:new"),
		Log:        slog.New(slog.DiscardHandler), Out: io.Discard,
		Host:    &host.Env{Root: t.TempDir(), Offline: true},
		Upgrade: &UpgradeRun{Plan: p, Record: rec, SpecDigest: "sha256:new", Cluster: cluster, SkipDrain: skipDrain},
	}
	return Upgrade(cfg), d
}

// TestUpgradeWorkflowOrderAndResume runs a worker's version upgrade
// against a fake cluster: drain, kubeadm's upgrade node phases in order,
// the kubelet, uncordon, then the record. A failed kubeadm phase leaves
// the node cordoned and the record as it was; the rerun resumes at that
// phase and finishes; a third run changes nothing.
func TestUpgradeWorkflowOrderAndResume(t *testing.T) {
	work := t.TempDir()
	fc := &fakeCluster{fail: "kubelet-config"}
	w, d := upgradeWorker(t, work, "v1.36.3", "v1.37.2", fc, false)
	failed, err := w.Run(context.Background(), d, &recordObs{}, RunOptions{})
	if err == nil || failed != "kubeadm-upgrade/kubelet-config" {
		t.Fatalf("failed %q, %v", failed, err)
	}
	want := []string{"drain w1", "kubeadm preflight", "kubeadm control-plane", "kubeadm kubeconfig", "kubeadm kubelet-config"}
	if !reflect.DeepEqual(fc.calls, want) {
		t.Fatalf("calls %v\nwant %v", fc.calls, want)
	}
	if r, _ := upgrade.ReadRecord(work); r.SpecDigest != "sha256:old" {
		t.Errorf("a failed upgrade recorded its spec")
	}
	// The rerun (a new process: a new plan from the same record) resumes.
	fc = &fakeCluster{}
	w, d = upgradeWorker(t, work, "v1.36.3", "v1.37.2", fc, false)
	d.Upgrade.Record, _ = upgrade.ReadRecord(work)
	d.SpecDigest = upgrade.JournalKey(d.Upgrade.Record.SpecDigest, "sha256:new")
	if _, err := w.Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	want = []string{"kubeadm kubelet-config", "kubeadm addon/coredns", "kubeadm addon/kube-proxy", "kubeadm post-upgrade", "kubelet v1.37.2", "uncordon w1"}
	if !reflect.DeepEqual(fc.calls, want) {
		t.Fatalf("rerun calls %v\nwant %v", fc.calls, want)
	}
	r, err := upgrade.ReadRecord(work)
	if err != nil || r.SpecDigest != "sha256:new" || r.KubernetesVersion != "v1.37.2" || r.Command != "upgrade" {
		t.Fatalf("record after the upgrade: %+v %v", r, err)
	}
	// Once recorded, the same spec plans nothing and calls nothing.
	fc = &fakeCluster{}
	w, d = upgradeWorker(t, t.TempDir(), "v1.37.2", "v1.37.2", fc, false)
	if _, err := w.Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(fc.calls) != 0 {
		t.Errorf("an upgrade to the recorded spec called %v", fc.calls)
	}
}

// TestUpgradeWithSkippedPhaseIsNotRecorded: an upgrade that skipped a
// phase (--skip-phases) keeps the old record, so the next run plans the
// same change; without the flag it runs only the skipped phase and then
// records the spec.
func TestUpgradeWithSkippedPhaseIsNotRecorded(t *testing.T) {
	work := t.TempDir()
	fc := &fakeCluster{}
	w, d := upgradeWorker(t, work, "v1.36.3", "v1.37.2", fc, false)
	if _, err := w.Run(context.Background(), d, &recordObs{}, RunOptions{Skip: []string{upgrade.PhaseUncordon}}); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(fc.calls, "uncordon w1") {
		t.Fatalf("the skipped phase ran: %v", fc.calls)
	}
	if r, _ := upgrade.ReadRecord(work); r.SpecDigest != "sha256:old" {
		t.Fatalf("an upgrade that skipped %s recorded its spec", upgrade.PhaseUncordon)
	}
	fc = &fakeCluster{}
	w, d = upgradeWorker(t, work, "v1.36.3", "v1.37.2", fc, false)
	d.Upgrade.Record, _ = upgrade.ReadRecord(work)
	d.SpecDigest = upgrade.JournalKey(d.Upgrade.Record.SpecDigest, "sha256:new")
	if _, err := w.Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"uncordon w1"}; !reflect.DeepEqual(fc.calls, want) {
		t.Fatalf("the run without --skip-phases called %v, want %v", fc.calls, want)
	}
	if r, _ := upgrade.ReadRecord(work); r.SpecDigest != "sha256:new" {
		t.Fatalf("record %s after the upgrade finished", r.SpecDigest)
	}
}

func TestUpgradeSkipDrain(t *testing.T) {
	fc := &fakeCluster{}
	w, d := upgradeWorker(t, t.TempDir(), "v1.36.3", "v1.37.2", fc, true)
	if _, err := w.Run(context.Background(), d, &recordObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range fc.calls {
		if strings.HasPrefix(c, "drain") || strings.HasPrefix(c, "uncordon") {
			t.Errorf("--skip-drain called %s", c)
		}
	}
	if len(fc.calls) == 0 || fc.calls[len(fc.calls)-1] != "kubelet v1.37.2" {
		t.Errorf("calls %v", fc.calls)
	}
}

// TestBootstrapRerunKeepsTheUpgradesRecord: a bootstrap that finds its
// run finished (a rerun at boot, with the first spec) leaves the record
// an upgrade wrote since; a bootstrap that ran records its spec.
func TestBootstrapRerunKeepsTheUpgradesRecord(t *testing.T) {
	work := t.TempDir()
	_, d := upgradeWorker(t, work, "v1.37.2", "v1.37.2", &fakeCluster{}, true)
	if _, err := RecordApplied(d, d.Upgrade.Record.Key, "sha256:upgraded", "upgrade"); err != nil {
		t.Fatal(err)
	}
	d.SpecDigest = "sha256:first"
	d.finishedEarlier = true
	if changed, err := RecordBootstrap(d); err != nil || changed {
		t.Fatalf("a finished bootstrap's rerun replaced the upgrade's record: %v %v", changed, err)
	}
	if r, _ := upgrade.ReadRecord(work); r.SpecDigest != "sha256:upgraded" {
		t.Fatalf("record %s", r.SpecDigest)
	}
	d.finishedEarlier = false
	if changed, err := RecordBootstrap(d); err != nil || !changed {
		t.Fatalf("a bootstrap that ran did not record: %v %v", changed, err)
	}
	if r, _ := upgrade.ReadRecord(work); r.SpecDigest != "sha256:first" || r.Command != "bootstrap" {
		t.Fatalf("record %+v", r)
	}
}

// TestBootstrapAfterAnUpgrade: on a node an upgrade brought to another
// spec, a bootstrap rerun with the first spec trusts its finished journal
// (it does not converge the host back to the first spec, which the
// read-only look would find differs), and a bootstrap with the upgrade's
// spec changes nothing; neither runs a phase. (A record others may write
// is not trusted for either: such a record of an upgrade refuses the
// bootstrap before its phases, session's
// TestForgedRecordDoesNotMakeABlankHostSucceed.)
func TestBootstrapAfterAnUpgrade(t *testing.T) {
	work := t.TempDir()
	_, d := upgradeWorker(t, work, "v1.37.2", "v1.37.2", &fakeCluster{}, true)
	d.Config.Spec.Join = &machineadm.Join{APIServerEndpoint: "cp.example:6443"}
	d.Config.Spec.Host.Files = []machineadm.File{{Path: "/etc/upgraded", Content: "new", Mode: "0644"}}
	if _, err := RecordApplied(d, d.Upgrade.Record.Key, "sha256:upgraded", "upgrade"); err != nil {
		t.Fatal(err)
	}
	journal := `{"specDigest":"sha256:first"}` + "\n" + `{"finishedAt":"2026-01-01T00:00:00Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(work, "state.jsonl"), []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	w := Bootstrap(d.Config)
	for i := range w.Phases {
		w.Phases[i] = poison(t, w.Phases[i])
	}
	for _, digest := range []string{"sha256:first", "sha256:upgraded"} {
		d.StateFile, d.SpecDigest, d.finishedEarlier = "", digest, false
		obs := &recordObs{}
		if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
			t.Fatalf("%s: %v", digest, err)
		}
		for _, e := range obs.events {
			if !strings.HasPrefix(e, "Unchanged ") {
				t.Errorf("%s: %s", digest, e)
			}
		}
		if r, _ := upgrade.ReadRecord(work); r == nil || r.SpecDigest != "sha256:upgraded" {
			t.Errorf("%s: record now %s", digest, r.SpecDigest)
		}
		if ok, _ := RecordBootstrap(d); ok {
			t.Errorf("%s: the bootstrap replaced the upgrade's record", digest)
		}
	}
}

// poison makes every leaf of p fail the test when it runs.
func poison(t *testing.T, p Phase) Phase {
	if len(p.Phases) == 0 {
		name := p.Name
		p.Run = func(context.Context, *Data) (Result, error) {
			t.Errorf("phase %s ran", name)
			return Result{}, nil
		}
		return p
	}
	for i := range p.Phases {
		p.Phases[i] = poison(t, p.Phases[i])
	}
	return p
}

// A dry run of an upgrade that skips a phase says the spec would not be
// recorded, as the real run does; without skips it would be.
func TestUpgradeDryRunWithSkippedPhaseSaysNotRecorded(t *testing.T) {
	d := &Data{DryRun: true, Upgrade: &UpgradeRun{Record: &upgrade.Record{}}, skipped: []string{upgrade.PhaseUncordon}}
	res, err := recordSpecPhase().Run(context.Background(), d)
	if err != nil || !strings.Contains(res.Message, "would not record") || !strings.Contains(res.Message, upgrade.PhaseUncordon) {
		t.Fatalf("dry run with a skipped phase: %q %v", res.Message, err)
	}
	d.skipped = nil
	if res, err = recordSpecPhase().Run(context.Background(), d); err != nil || !strings.HasPrefix(res.Message, "would record") {
		t.Fatalf("dry run without skips: %q %v", res.Message, err)
	}
}
