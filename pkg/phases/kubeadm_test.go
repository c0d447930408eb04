package phases

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm"
	"github.com/machineadm/machineadm/pkg/spec"
)

// fakeJournal is a kubelet journal double.
type fakeJournal struct{ units []string }

func (j *fakeJournal) Tail(_ context.Context, unit string, n int) []string {
	j.units = append(j.units, unit)
	return []string{"E1201 kubelet.go:1: failed to run Kubelet: misconfiguration"}
}

// workerData is a real (not dry) worker join under a temporary root, with
// its token file delivered there.
func workerData(t *testing.T) (*Data, *machineadm.MachineBootstrapConfig) {
	t.Helper()
	l, err := spec.Load([]byte(testspec.MinimalWorker), "worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	tok := filepath.Join(root, "etc/machineadm/secrets/bootstrap-token")
	if err := os.MkdirAll(filepath.Dir(tok), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tok, []byte("abcdef.0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := testData(t)
	d.Config, d.Root = l.Config, root
	return d, l.Config
}

// TestKubeadmPhasesStubRunner: the kubeadm phases of a worker join run in
// kubeadm's order with the configuration kubeadm-config wrote, through
// the runner the Data names.
func TestKubeadmPhasesStubRunner(t *testing.T) {
	d, cfg := workerData(t)
	var ran []string
	d.RunKubeadm = func(ctx context.Context, r *kubeadm.Runner, p kubeadm.Phase) error {
		ran = append(ran, p.Name)
		data, err := os.ReadFile(r.ConfigPath)
		if err != nil || !strings.Contains(string(data), "kind: JoinConfiguration") || !strings.Contains(string(data), "abcdef.0123456789abcdef") {
			t.Errorf("phase %s: configuration %s: %v", p.Name, r.ConfigPath, err)
		}
		if r.Action != machineadm.ActionJoin || r.DryRunDir != "" {
			t.Errorf("runner %+v", r)
		}
		return nil
	}
	w := &Workflow{Phases: append([]Phase{InputsCheck(), KubeadmConfigPhase()}, KubeadmPhases(cfg)...)}
	if _, err := w.Run(context.Background(), d, &eventObs{}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"preflight", "kubelet-start", "kubelet-wait-bootstrap"}; !reflect.DeepEqual(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	fi, err := os.Stat(filepath.Join(d.WorkDir, "kubeadm-join.yaml"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeadm configuration: %v %v", fi, err)
	}
}

// TestKubeadmPhaseFailureReadsJournal: a failed kubelet phase reads the
// kubelet's journal through Data.Journal, and its class is the one the
// runner gave it.
func TestKubeadmPhaseFailureReadsJournal(t *testing.T) {
	d, cfg := workerData(t)
	j := &fakeJournal{}
	d.Journal = j
	var lines []string
	d.RunKubeadm = func(ctx context.Context, r *kubeadm.Runner, p kubeadm.Phase) error {
		if p.Name != "kubelet-start" {
			return nil
		}
		if r.Journal == nil {
			t.Fatal("no journal reader for a real run")
		}
		lines = r.Journal(ctx)
		return errclass.New(errclass.KubeletFailed, "", errors.New("kubelet did not start"))
	}
	w := &Workflow{Phases: append([]Phase{KubeadmConfigPhase()}, KubeadmPhases(cfg)...)}
	obs := &eventObs{}
	failed, err := w.Run(context.Background(), d, obs, RunOptions{})
	if failed != "kubelet-start" || err == nil {
		t.Fatalf("failed %q err %v", failed, err)
	}
	if c, _ := errclass.Of(err); c != errclass.KubeletFailed {
		t.Errorf("class %s", c)
	}
	if !reflect.DeepEqual(j.units, []string{"kubelet"}) || len(lines) != 1 || !strings.HasPrefix(lines[0], "[journal kubelet] ") {
		t.Errorf("journal units %v lines %q", j.units, lines)
	}
	if last := obs.events[len(obs.events)-1]; last != "Failed kubelet-start" {
		t.Errorf("last event %q", last)
	}
}

// TestInputsCheckMissingTokenChangesNothing: a missing secret file stops
// inputs-check as PayloadUnavailable, naming the field.
func TestInputsCheckMissingTokenChangesNothing(t *testing.T) {
	d, _ := workerData(t)
	os.Remove(filepath.Join(d.Root, "etc/machineadm/secrets/bootstrap-token"))
	_, err := InputsCheck().Run(context.Background(), d)
	if c, _ := errclass.Of(err); c != errclass.PayloadUnavailable || !strings.Contains(err.Error(), "spec.join.token") {
		t.Errorf("missing token: %s %v", c, err)
	}
	if entries, _ := os.ReadDir(d.WorkDir); len(entries) != 0 {
		t.Errorf("inputs-check wrote %v", entries)
	}
}

// TestHostPhasesDeclareClasses: a plain error in a host phase takes the
// class its step declares (moved from the report's phase table).
func TestHostPhasesDeclareClasses(t *testing.T) {
	w := Prepare(nil)
	classes := map[string]errclass.Class{}
	for _, n := range w.Nodes() {
		classes[n.Name] = n.Class
	}
	for name, want := range map[string]errclass.Class{
		"host-check": errclass.HostPreparationFailed, "files": errclass.HostPreparationFailed,
		"containerd": errclass.ContainerRuntimeUnavailable, "static-pods": errclass.HostPreparationFailed,
	} {
		if classes[name] != want {
			t.Errorf("%s: class %s, want %s", name, classes[name], want)
		}
	}
}

// TestInputsCheckEmptySecretFile: an empty token file stops inputs-check,
// naming the field, before any host phase runs.
func TestInputsCheckEmptySecretFile(t *testing.T) {
	d, _ := workerData(t)
	if err := os.WriteFile(filepath.Join(d.Root, "etc/machineadm/secrets/bootstrap-token"), []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := InputsCheck().Run(context.Background(), d)
	if c, _ := errclass.Of(err); c != errclass.PayloadUnavailable || !strings.Contains(err.Error(), "spec.join.token") || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty token file: %s %v", c, err)
	}
}

// A worker join killed in kubelet-start after the kubelet it started
// bootstrapped: the run that resumes there does not run kubeadm's
// kubelet-start again (it would refuse the Node that kubelet registered),
// and goes on with kubelet-wait-bootstrap. Without the kubelet's
// kubeconfig, or when the run does not resume there, kubeadm runs it.
func TestResumedJoinSkipsKubeletStartAfterBootstrap(t *testing.T) {
	for _, tc := range []struct {
		name       string
		completed  []string
		kubeconfig bool
		want       []string
	}{
		{"resumed, kubelet bootstrapped", []string{"preflight"}, true, []string{"kubelet-wait-bootstrap"}},
		{"resumed, no kubelet kubeconfig", []string{"preflight"}, false, []string{"kubelet-start", "kubelet-wait-bootstrap"}},
		{"first run, kubeconfig of unknown origin", nil, true, []string{"preflight", "kubelet-start", "kubelet-wait-bootstrap"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, cfg := workerData(t)
			if tc.kubeconfig {
				p := filepath.Join(d.Root, kubeadm.KubeletKubeconfigPath())
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.completed != nil {
				st := &state{SpecDigest: d.SpecDigest, Completed: tc.completed}
				if err := writeState(filepath.Join(d.WorkDir, stateFile), st, false); err != nil {
					t.Fatal(err)
				}
			}
			var ran []string
			d.RunKubeadm = func(ctx context.Context, r *kubeadm.Runner, p kubeadm.Phase) error {
				ran = append(ran, p.Name)
				return nil
			}
			w := &Workflow{State: true, Phases: KubeadmPhases(cfg)}
			obs := &eventObs{}
			if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ran, tc.want) {
				t.Errorf("kubeadm ran %v, want %v (events %v)", ran, tc.want, obs.events)
			}
		})
	}
}

// deliverSecrets writes a well-formed secret into every secret file cfg
// names, below root.
func deliverSecrets(t *testing.T, root string, cfg *machineadm.MachineBootstrapConfig) {
	t.Helper()
	values := map[string]string{
		machineadm.SecretFormatBootstrapToken: "abcdef.0123456789abcdef",
		machineadm.SecretFormatCertificateKey: strings.Repeat("ab", 32),
	}
	for _, f := range machineadm.SecretFields(cfg) {
		if f.Kind != machineadm.SecretKindSource || f.Source.File == "" {
			continue
		}
		p := filepath.Join(root, f.Source.File)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(values[f.Format]+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDryRunMissingSecretFails: a dry run reads the same inputs as a real
// run, so a missing token file fails inputs-check with the field named
// and class PayloadUnavailable, and nothing after it runs.
func TestDryRunMissingSecretFails(t *testing.T) {
	l, err := spec.Load([]byte(testspec.MinimalWorker), "worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := testData(t)
	d.Config, d.Root, d.DryRun = l.Config, t.TempDir(), true
	ran := false
	d.RunKubeadm = func(context.Context, *kubeadm.Runner, kubeadm.Phase) error { ran = true; return nil }
	w := &Workflow{Phases: append([]Phase{InputsCheck(), KubeadmConfigPhase()}, KubeadmPhases(l.Config)...)}
	failed, err := w.Run(context.Background(), d, &eventObs{}, RunOptions{})
	if failed != InputsCheckPhase || err == nil {
		t.Fatalf("failed %q, err %v; want inputs-check to fail", failed, err)
	}
	if class, _ := errclass.Of(err); class != errclass.PayloadUnavailable || !strings.Contains(err.Error(), "spec.join.token") {
		t.Errorf("class %s, error %v; want PayloadUnavailable naming spec.join.token", class, err)
	}
	if ran {
		t.Error("a kubeadm phase ran after inputs-check failed")
	}
}

// TestDryRunPhaseReportsPlan: in a dry run a kubeadm phase's result
// carries the runner's plan as its change lines, and a join's preflight
// says the discovery would happen without contacting the endpoint; a phase
// with nothing to change is Unchanged.
func TestDryRunPhaseReportsPlan(t *testing.T) {
	d, cfg := workerData(t)
	d.DryRun = true
	d.RunKubeadm = func(ctx context.Context, r *kubeadm.Runner, p kubeadm.Phase) error {
		if p.Name == "kubelet-start" {
			r.Plan = []string{"would write /var/lib/kubelet/config.yaml"}
		}
		return nil
	}
	obs := &resultObs{results: map[string]Result{}}
	w := &Workflow{Phases: append([]Phase{InputsCheck(), KubeadmConfigPhase()}, KubeadmPhases(cfg)...)}
	if _, err := w.Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := obs.results["kubelet-start"].Changes; !reflect.DeepEqual(got, []string{"would write /var/lib/kubelet/config.yaml"}) {
		t.Errorf("kubelet-start changes %q", got)
	}
	pre := strings.Join(obs.results["preflight"].Changes, "\n")
	if !strings.Contains(pre, "would discover the cluster at "+cfg.Spec.Join.APIServerEndpoint) || !strings.Contains(pre, "not contacted") {
		t.Errorf("preflight plan %q", pre)
	}
	if obs.status["kubelet-wait-bootstrap"] != StatusUnchanged {
		t.Errorf("kubelet-wait-bootstrap with no plan: %s, want Unchanged", obs.status["kubelet-wait-bootstrap"])
	}
}

// resultObs records each phase's result and status.
type resultObs struct {
	results map[string]Result
	status  map[string]Status
}

func (o *resultObs) PhaseStarted(string) {}
func (o *resultObs) PhaseFinished(name string, s Status, res Result, _ error) {
	if o.status == nil {
		o.status = map[string]Status{}
	}
	o.results[name], o.status[name] = res, s
}

// TestDryRunStartsFromTheHostAlone: a dry run's kubeadm-config phase
// removes what an earlier dry run left in the directory (kubeadm's files,
// the staged certificates, the patches, the kubeadm configuration of
// either action), which kubeadm would otherwise take as present and plan
// as "unchanged"; the reports and the log stay. A real run removes
// nothing from its work directory, and neither does a dry run of one
// phase (`bootstrap phase NAME --dry-run`), which builds on the earlier
// dry run's files as the real one builds on the host.
func TestDryRunStartsFromTheHostAlone(t *testing.T) {
	stale := []string{"kubeadm/bootstrap-kubelet.conf", "kubeadm/etcd/ca.crt", "pki/apiserver.crt", "pki/ca.crt", "patches/kubeletconfiguration+merge.json", "kubeadm-init.yaml"}
	kept := []string{"var/lib/machineadm/report.json", "var/lib/machineadm/machineadm.log", ".machineadm-dry-run"}
	for _, tc := range []struct {
		name   string
		dryRun bool
		only   string
	}{{"dry run", true, ""}, {"real run", false, ""}, {"dry run of one phase", true, "kubelet-start"}} {
		dryRun := tc.dryRun && tc.only == "" // whether the stale files go
		d, _ := workerData(t)
		d.DryRun, d.opts.Only = tc.dryRun, tc.only
		d.RunKubeadm = func(context.Context, *kubeadm.Runner, kubeadm.Phase) error { return nil }
		for _, f := range append(append([]string{}, stale...), kept...) {
			p := filepath.Join(d.WorkDir, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("from an earlier run"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := KubeadmConfigPhase().Run(context.Background(), d); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, f := range stale {
			_, err := os.Stat(filepath.Join(d.WorkDir, f))
			if dryRun && err == nil {
				t.Errorf("%s: %s from an earlier dry run is still there", tc.name, f)
			}
			if !dryRun && err != nil {
				t.Errorf("%s: %s was removed (%v)", tc.name, f, err)
			}
		}
		for _, f := range kept {
			if b, err := os.ReadFile(filepath.Join(d.WorkDir, f)); err != nil || string(b) != "from an earlier run" {
				t.Errorf("%s: %s changed (%v)", tc.name, f, err)
			}
		}
		if b, err := os.ReadFile(filepath.Join(d.WorkDir, "kubeadm-join.yaml")); err != nil || !strings.Contains(string(b), "JoinConfiguration") {
			t.Errorf("%s: this run's kubeadm-join.yaml: %v", tc.name, err)
		}
	}
}

// nodeObs records the phases whose result says the join's Node exists.
type nodeObs struct {
	eventObs
	registered []string
}

func (o *nodeObs) PhaseFinished(name string, s Status, res Result, err error) {
	if res.NodeRegistered {
		o.registered = append(o.registered, name)
	}
	o.eventObs.PhaseFinished(name, s, res, err)
}

// TestJoinNodeRegisteredReported: once a join's kubelet-wait-bootstrap
// succeeded, its result says the Node exists, so that a later failure is
// reported with it (report.Recorder.NodeRegistered); a join that failed
// in kubelet-wait-bootstrap, an Init and a dry run do not say so.
func TestJoinNodeRegisteredReported(t *testing.T) {
	for _, tc := range []struct {
		name   string
		failIn string
		dryRun bool
		want   []string
	}{
		{name: "fails after the kubelet bootstrapped", failIn: "later", want: []string{"kubelet-wait-bootstrap"}},
		{name: "fails in the bootstrap", failIn: "kubelet-wait-bootstrap"},
		{name: "dry run", failIn: "later", dryRun: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, cfg := workerData(t)
			d.DryRun = tc.dryRun
			d.RunKubeadm = func(ctx context.Context, r *kubeadm.Runner, p kubeadm.Phase) error {
				if p.Name == tc.failIn {
					return errors.New("kubelet did not bootstrap")
				}
				return nil
			}
			later := Phase{Name: "later", Run: func(context.Context, *Data) (Result, error) { return Result{}, errors.New("later broke") }}
			w := &Workflow{Phases: append(append([]Phase{KubeadmConfigPhase()}, KubeadmPhases(cfg)...), later)}
			obs := &nodeObs{}
			if failed, _ := w.Run(context.Background(), d, obs, RunOptions{}); failed != tc.failIn {
				t.Fatalf("failed in %q, want %q (%v)", failed, tc.failIn, obs.events)
			}
			if !reflect.DeepEqual(obs.registered, tc.want) {
				t.Errorf("Node registered after %v, want %v", obs.registered, tc.want)
			}
		})
	}
	// Only kubelet-wait-bootstrap registers a Node, and only in a join.
	_, cfg := workerData(t)
	for _, action := range []machineadm.Action{machineadm.ActionJoin, machineadm.ActionInit} {
		c := *cfg
		c.Spec.Action = action
		for _, row := range kubeadm.PhaseTable(action) {
			if p := rowPhase(&c, row.Name, row); p.RegistersNode != (action == machineadm.ActionJoin && row.Name == "kubelet-wait-bootstrap") {
				t.Errorf("%s phase %s: RegistersNode %v", action, row.Name, p.RegistersNode)
			}
		}
	}
}

// TestInputsCheckWarnsAboutReadableSecrets: a token file and CA private
// keys that group or others may read draw a warning naming the field and
// the file (in the result, for the report, and in the console lines);
// owner-only files and certificates do not. They drew nothing.
func TestInputsCheckWarnsAboutReadableSecrets(t *testing.T) {
	d, _ := workerData(t)
	tok := filepath.Join(d.Root, "etc/machineadm/secrets/bootstrap-token")
	res, err := InputsCheck().Run(context.Background(), d)
	if err != nil || len(res.Warnings) != 0 {
		t.Fatalf("owner-only token: warnings %q, err %v", res.Warnings, err)
	}
	if err := os.Chmod(tok, 0o640); err != nil {
		t.Fatal(err)
	}
	res, err = InputsCheck().Run(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	want := "spec.join.token.file: /etc/machineadm/secrets/bootstrap-token is mode 0640: group or others can read this secret"
	if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], want) || !slices.Contains(res.Changes, "warning: "+res.Warnings[0]) {
		t.Errorf("warnings %q, changes %q; want one starting %q", res.Warnings, res.Changes, want)
	}
	if strings.Contains(strings.Join(res.Warnings, " "), "0123456789abcdef") {
		t.Errorf("a warning shows the token: %q", res.Warnings)
	}

	// The CA directory: every *.key, also under etcd/, by its mode.
	pki := filepath.Join(d.Root, "etc/machineadm/pki")
	for name, mode := range map[string]os.FileMode{"ca.crt": 0o644, "ca.key": 0o600, "sa.key": 0o604, "etcd/ca.key": 0o640, "etcd/ca.crt": 0o644} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(pki, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pki, name), []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(pki, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	d.Config.Spec.ControlPlane = &machineadm.ControlPlane{PKI: machineadm.PKI{Dir: "/etc/machineadm/pki"}}
	got := secretModeWarnings(d)
	if len(got) != 3 || !strings.HasPrefix(got[0], "spec.controlPlane.pki.dir: /etc/machineadm/pki/sa.key is mode 0604") || !strings.HasPrefix(got[1], "spec.controlPlane.pki.dir: /etc/machineadm/pki/etcd/ca.key is mode 0640") {
		t.Errorf("warnings %q: want the token, sa.key and etcd/ca.key", got)
	}
}
