package phases

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
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
				if err := st.save(d); err != nil {
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
