package phases

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/testspec"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
	"github.com/machineadm/machineadm/pkg/spec"
)

// eventObs records statuses and the classes of failures.
type eventObs struct {
	events  []string
	classes map[string]errclass.Class
}

func (o *eventObs) PhaseStarted(name string) { o.events = append(o.events, "start "+name) }
func (o *eventObs) PhaseFinished(name string, s Status, _ Result, err error) {
	o.events = append(o.events, string(s)+" "+name)
	if err != nil {
		if o.classes == nil {
			o.classes = map[string]errclass.Class{}
		}
		o.classes[name], _ = errclass.Of(err)
	}
}

// treeWorkflow is pre, then addon with coredns and kube-proxy, then post;
// fail names a leaf that fails with failErr.
func treeWorkflow(fail string, failErr error) *Workflow {
	leaf := func(name string, changed bool) Phase {
		return Phase{Name: name, Run: func(ctx context.Context, d *Data) (Result, error) {
			if strings.HasSuffix(fail, name) {
				return Result{}, failErr
			}
			return Result{Changed: changed}, nil
		}}
	}
	return &Workflow{Command: "bootstrap", State: true, Phases: []Phase{
		leaf("pre", false),
		{Name: "addon", Class: errclass.ControlPlaneUnhealthy, Phases: []Phase{leaf("coredns", true), leaf("kube-proxy", true)}},
		leaf("post", false),
	}}
}

func TestTreeSkipChildOnly(t *testing.T) {
	obs := &eventObs{}
	if _, err := treeWorkflow("", nil).Run(context.Background(), testData(t), obs, RunOptions{Skip: []string{"addon/kube-proxy"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"start pre", "Unchanged pre", "start addon", "start addon/coredns", "Succeeded addon/coredns",
		"Skipped addon/kube-proxy", "Succeeded addon", "start post", "Unchanged post"}
	if !reflect.DeepEqual(obs.events, want) {
		t.Errorf("events\n got  %v\n want %v", obs.events, want)
	}
}

func TestTreeSkipParentSkipsChildren(t *testing.T) {
	obs := &eventObs{}
	if _, err := treeWorkflow("", nil).Run(context.Background(), testData(t), obs, RunOptions{Skip: []string{"addon"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"start pre", "Unchanged pre", "Skipped addon", "Skipped addon/coredns", "Skipped addon/kube-proxy", "start post", "Unchanged post"}
	if !reflect.DeepEqual(obs.events, want) {
		t.Errorf("events\n got  %v\n want %v", obs.events, want)
	}
}

func TestTreeOnly(t *testing.T) {
	w := treeWorkflow("", nil)
	obs := &eventObs{}
	if _, err := w.Run(context.Background(), testData(t), obs, RunOptions{Only: "addon/kube-proxy"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"start addon", "start addon/kube-proxy", "Succeeded addon/kube-proxy", "Succeeded addon"}; !reflect.DeepEqual(obs.events, want) {
		t.Errorf("only a leaf: %v, want %v", obs.events, want)
	}
	obs = &eventObs{}
	if _, err := w.Run(context.Background(), testData(t), obs, RunOptions{Only: "addon"}); err != nil {
		t.Fatal(err)
	}
	if len(obs.events) != 6 || obs.events[0] != "start addon" || obs.events[5] != "Succeeded addon" {
		t.Errorf("only a parent runs its children: %v", obs.events)
	}
	if got := w.Names(); !reflect.DeepEqual(got, []string{"pre", "addon", "addon/coredns", "addon/kube-proxy", "post"}) {
		t.Errorf("names %v", got)
	}
	if got := w.Leaves(); !reflect.DeepEqual(got, []string{"pre", "addon/coredns", "addon/kube-proxy", "post"}) {
		t.Errorf("leaves %v", got)
	}
	if err := w.CheckNames([]string{"addon/kube-proxy", "addon"}); err != nil {
		t.Errorf("full names refused: %v", err)
	}
	if err := w.CheckNames([]string{"kube-proxy"}); err == nil {
		t.Error("a child's short name was accepted")
	}
}

func TestTreeFailureNamesLeafAndIsClassifiedOnce(t *testing.T) {
	// A plain error takes the class its phase (or parent) declares.
	obs := &eventObs{}
	failed, err := treeWorkflow("addon/kube-proxy", errors.New("boom")).Run(context.Background(), testData(t), obs, RunOptions{})
	if failed != "addon/kube-proxy" || err == nil {
		t.Fatalf("failed %q err %v", failed, err)
	}
	if c, h := errclass.Of(err); c != errclass.ControlPlaneUnhealthy || h == "" {
		t.Errorf("declared class not applied: %s %q", c, h)
	}
	want := []string{"start pre", "Unchanged pre", "start addon", "start addon/coredns", "Succeeded addon/coredns",
		"start addon/kube-proxy", "Failed addon/kube-proxy", "Failed addon"}
	if !reflect.DeepEqual(obs.events, want) {
		t.Errorf("events\n got  %v\n want %v", obs.events, want)
	}
	if obs.classes["addon"] != errclass.ControlPlaneUnhealthy {
		t.Errorf("parent's failure class %v", obs.classes)
	}
	// An error classified where it was born keeps its class.
	born := errclass.New(errclass.VerificationFailed, "check the digest", errors.New("bad digest"))
	_, err = treeWorkflow("addon/coredns", born).Run(context.Background(), testData(t), &eventObs{}, RunOptions{})
	if c, h := errclass.Of(err); c != errclass.VerificationFailed || h != "check the digest" {
		t.Errorf("born class lost: %s %q", c, h)
	}
	// A top-level phase without a class is Internal.
	_, err = treeWorkflow("pre", errors.New("boom")).Run(context.Background(), testData(t), &eventObs{}, RunOptions{})
	if c, _ := errclass.Of(err); c != errclass.Internal {
		t.Errorf("unclassified top-level failure: %s", c)
	}
}

func TestTreeResumeAfterFailedLeaf(t *testing.T) {
	d := testData(t)
	if _, err := treeWorkflow("addon/kube-proxy", errors.New("boom")).Run(context.Background(), d, &eventObs{}, RunOptions{}); err == nil {
		t.Fatal("no failure")
	}
	obs := &eventObs{}
	if _, err := treeWorkflow("", nil).Run(context.Background(), d, obs, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"Skipped pre", "start addon", "Skipped addon/coredns", "start addon/kube-proxy", "Succeeded addon/kube-proxy", "Succeeded addon", "start post", "Unchanged post"}
	if !reflect.DeepEqual(obs.events, want) {
		t.Errorf("resume events\n got  %v\n want %v", obs.events, want)
	}
}

func TestTreePrint(t *testing.T) {
	var b strings.Builder
	treeWorkflow("", nil).Print(&b)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[2], "  addon/coredns") || !strings.HasPrefix(lines[1], "addon") {
		t.Errorf("tree:\n%s", b.String())
	}
}

// CheckNames' error quotes every name (an empty one from "--skip-phases a,"
// is visible), says why a kubeadm phase is not in this spec's tree, and
// names the full name of a sub-phase given by its short name.
func TestCheckNamesExplains(t *testing.T) {
	if err := treeWorkflow("", nil).CheckNames([]string{"", "", "kube-proxy"}); err == nil ||
		!strings.HasPrefix(err.Error(), `unknown phase(s) "", "kube-proxy"`) ||
		strings.Count(err.Error(), `""`) != 1 ||
		!strings.Contains(err.Error(), `"kube-proxy" (did you mean "addon/kube-proxy"?`) {
		t.Errorf("CheckNames(empty, empty, short) = %v", err)
	}
	l, err := spec.Load([]byte(testspec.MinimalWorker), "worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Names come from the kubeadm phase table, the only list of them: a
	// join row that is Never, one whose condition fails for a worker, and
	// an init row that join lacks.
	var never, notHere, initOnly string
	applies := map[string]bool{}
	for _, r := range run.PhasesFor(l.Config) {
		applies[r.Name] = true
	}
	for _, r := range run.PhaseTable(machineadm.ActionJoin) {
		switch {
		case r.Never && never == "":
			never = r.Name
		case !r.Never && !applies[r.Name] && notHere == "":
			notHere = r.Name
		}
	}
	for _, r := range run.PhaseTable(machineadm.ActionInit) {
		if _, ok := run.Lookup(machineadm.ActionJoin, r.Name); !ok && initOnly == "" {
			initOnly = r.Name
		}
	}
	if never == "" || notHere == "" || initOnly == "" {
		t.Fatalf("phase table lacks a case: never %q, not here %q, init only %q", never, notHere, initOnly)
	}
	err = Bootstrap(l.Config).CheckNames([]string{notHere, initOnly, never, "no-such-phase"})
	for _, want := range []string{
		strconv.Quote(notHere) + " (a kubeadm phase that does not apply to this spec)",
		strconv.Quote(initOnly) + " (a phase of kubeadm init; this spec's action is Join)",
		strconv.Quote(never) + " (a kubeadm phase machineadm never runs",
		`"no-such-phase";`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckNames on a worker = %v, want it to contain %q", err, want)
		}
	}
}
