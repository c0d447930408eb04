package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/redact"
)

// fakeClock advances by step on every reading.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// memWriter keeps every report it is given.
type memWriter struct {
	mu      sync.Mutex
	name    string
	reports []*BootstrapReport
	err     error
	delay   time.Duration
}

func (w *memWriter) Name() string { return w.name }
func (w *memWriter) Write(ctx context.Context, r *BootstrapReport) error {
	if w.delay > 0 {
		time.Sleep(w.delay)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reports = append(w.reports, r)
	return w.err
}

func (w *memWriter) only(t *testing.T) *BootstrapReport {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.reports) != 1 {
		t.Fatalf("writer %s got %d reports, want exactly 1", w.name, len(w.reports))
	}
	return w.reports[0]
}

type panicWriter struct{}

func (panicWriter) Name() string                                  { return "panicky" }
func (panicWriter) Write(context.Context, *BootstrapReport) error { panic("writer bug") }
func testMeta() Meta {
	return Meta{Machine: Machine{Hostname: "w1", NodeName: "w1", MachineadmVersion: "v0.1.0", KubernetesVersion: "v1.37.2", Role: "Worker", Action: "Join"}, Command: "bootstrap"}
}

func TestRecorderSuccess(t *testing.T) {
	clock := &fakeClock{t: t0, step: time.Second}
	w := &memWriter{name: "mem"}
	rec := NewRecorder(testMeta(), []Writer{w}, nil, clock.now)
	rec.Plan("files", "preflight", "kubelet-start", "static-pods")
	rec.PhaseStarted("files")
	rec.PhaseFinished("files", PhaseUnchanged, "3 files already as wanted")
	rec.PhaseStarted("preflight")
	rec.PhaseFinished("preflight", PhaseSucceeded, "")
	rec.PhaseStarted("kubelet-start")
	rec.PhaseFinished("kubelet-start", PhaseSucceeded, "")
	if _, ok := rec.Report(); ok {
		t.Fatal("Report before Finish must say not finished")
	}
	if err := rec.Finish(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(t.Context()); err != nil {
		t.Fatal("second Finish:", err)
	}
	r := w.only(t)
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if r.Result != ResultSucceeded || r.ErrorClass != "" || r.FailedPhase != "" || r.Hint != "" {
		t.Errorf("success report carries a failure: %+v", r)
	}
	want := []struct {
		name   string
		status PhaseStatus
		ms     int64
	}{{"files", PhaseUnchanged, 1000}, {"preflight", PhaseSucceeded, 1000}, {"kubelet-start", PhaseSucceeded, 1000}, {"static-pods", PhaseSkipped, 0}}
	if len(r.Phases) != len(want) {
		t.Fatalf("phases: %+v", r.Phases)
	}
	for i, p := range r.Phases {
		if p.Name != want[i].name || p.Status != want[i].status || p.DurationMs != want[i].ms {
			t.Errorf("phase %d = %s %s %dms, want %+v", i, p.Name, p.Status, p.DurationMs, want[i])
		}
	}
	if r.Phases[3].Message != "not run" {
		t.Errorf("unplanned phase message %q", r.Phases[3].Message)
	}
	if !r.StartTime.Equal(t0.Add(time.Second)) || r.EndTime.Before(r.Phases[2].StartTime) {
		t.Errorf("times: start %v end %v", r.StartTime, r.EndTime)
	}
	if got, ok := rec.Report(); !ok || got.Result != ResultSucceeded {
		t.Error("Report after Finish")
	}
}

func TestRecorderFailureClassified(t *testing.T) {
	w := &memWriter{name: "mem"}
	rec := NewRecorder(testMeta(), []Writer{w}, nil, nil)
	rec.Plan("preflight", "kubelet-start", "static-pods")
	rec.PhaseStarted("preflight")
	rec.PhaseFinished("preflight", PhaseSucceeded, "")
	rec.PhaseStarted("kubelet-start")
	rec.AppendOutput("[discovery] Trying to connect to API Server \"127.0.0.1:6443\"")
	cause := errors.New(`couldn't validate the identity of the API Server: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "sha256:00" are pinned`)
	// The class comes with the error, from where it failed (the kubeadm
	// runner classifies this message as DiscoveryFailed: see
	// kubeadm.TestClassify); the recorder keeps the first failure's.
	rec.Fail("", errclass.New(errclass.DiscoveryFailed, "check spec.join.caCertHashes", cause)) // "" is the running phase
	rec.Fail("static-pods", errors.New("a later failure is not the cause"))
	if err := rec.Finish(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := w.only(t)
	if r.Result != ResultFailed || r.FailedPhase != "kubelet-start" || r.ErrorClass != errclass.DiscoveryFailed || r.Error != cause.Error() || !strings.Contains(r.Hint, "caCertHashes") {
		t.Errorf("failure: phase %q class %q hint %q error %q", r.FailedPhase, r.ErrorClass, r.Hint, r.Error)
	}
	if len(r.Phases) != 3 || r.Phases[1].Status != PhaseFailed || r.Phases[2].Status != PhaseFailed {
		t.Errorf("phases: %+v", r.Phases)
	}
	if len(r.LogTail) != 1 {
		t.Errorf("log tail: %q", r.LogTail)
	}
}

func TestRecorderNotReachedAndUnfinished(t *testing.T) {
	w := &memWriter{name: "mem"}
	rec := NewRecorder(testMeta(), []Writer{w}, nil, nil)
	rec.Plan("preflight", "certs", "etcd")
	rec.PhaseStarted("preflight")
	rec.PhaseFinished("preflight", PhaseFailed, "preflight checks failed") // no Fail call
	rec.PhaseStarted("certs")                                              // never finished
	if err := rec.Finish(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := w.only(t)
	// Without Fail nothing says why: the run fails in the phase, as a bug.
	if r.FailedPhase != "preflight" || r.ErrorClass != errclass.Internal || r.Error != "preflight checks failed" {
		t.Errorf("a phase finished Failed must make the run fail in it: %q %q %q", r.FailedPhase, r.ErrorClass, r.Error)
	}
	if r.Phases[1].Name != "certs" || r.Phases[1].Status != PhaseFailed {
		t.Errorf("an unfinished phase must be Failed: %+v", r.Phases[1])
	}
	if r.Phases[2].Name != "etcd" || r.Phases[2].Status != PhaseSkipped || !strings.Contains(r.Phases[2].Message, "not reached") {
		t.Errorf("a planned phase never started must be Skipped: %+v", r.Phases[2])
	}
}

func TestRecorderWritersIndependent(t *testing.T) {
	bad := &memWriter{name: "bad", err: errors.New("disk full")}
	slow := &memWriter{name: "slow", delay: 50 * time.Millisecond}
	good := &memWriter{name: "good"}
	rec := NewRecorder(testMeta(), []Writer{bad, panicWriter{}, slow, nil, good}, nil, nil)
	rec.Fail("", errors.New("boom"))
	err := rec.Finish(t.Context())
	if err == nil {
		t.Fatal("Finish must report failing writers")
	}
	for _, want := range []string{"report writer bad: disk full", "report writer panicky: panic: writer bug"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	var we *WriterError
	if !errors.As(err, &we) || we.Writer != "bad" {
		t.Errorf("errors.As WriterError: %v", we)
	}
	good.only(t)
	slow.only(t)
	if err2 := rec.Finish(t.Context()); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("second Finish must return the first result, got %v", err2)
	}
	good.only(t)
}

// With a logger set, each final writer's duration and error are logged
// at debug level; without one nothing is.
func TestRecorderLogsWriters(t *testing.T) {
	var buf bytes.Buffer
	bad := &memWriter{name: "bad", err: errors.New("disk full")}
	good := &memWriter{name: "good"}
	rec := NewRecorder(testMeta(), []Writer{bad, good}, nil, nil)
	rec.SetLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	_ = rec.Finish(t.Context())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a line per writer, got %q", buf.String())
	}
	for _, want := range []string{"writer=bad", "writer=good", "disk full"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %q", buf.String(), want)
		}
	}
	for _, l := range lines {
		if !strings.Contains(l, "level=DEBUG") || !strings.Contains(l, "outcome report: writer done") || !strings.Contains(l, "took=") {
			t.Errorf("line %q: want a debug line with the writer's duration", l)
		}
	}
	// Without a logger (the default) the writers still run.
	quiet := &memWriter{name: "quiet"}
	if err := NewRecorder(testMeta(), []Writer{quiet}, nil, nil).Finish(t.Context()); err != nil {
		t.Fatal(err)
	}
	quiet.only(t)
}

// gateWriter blocks in Write until released, telling when it entered.
type gateWriter struct {
	memWriter
	entered, release chan struct{}
}

func (g *gateWriter) Write(ctx context.Context, r *BootstrapReport) error {
	close(g.entered)
	<-g.release
	return g.memWriter.Write(ctx, r)
}

func TestRecorderInterruptedWhilePhaseRuns(t *testing.T) {
	w := &gateWriter{memWriter: memWriter{name: "gate"}, entered: make(chan struct{}), release: make(chan struct{})}
	rec := NewRecorder(testMeta(), []Writer{w}, nil, nil)
	rec.Plan("preflight", "kubelet-start", "static-pods")
	rec.PhaseStarted("preflight")
	rec.PhaseFinished("preflight", PhaseSucceeded, "")
	rec.PhaseStarted("kubelet-start")

	// Output keeps arriving from other goroutines all along (run with -race).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var lines atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					rec.AppendOutput(fmt.Sprintf("line %d", lines.Add(1)))
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	interrupted := make(chan error, 1)
	go func() { interrupted <- rec.Interrupted(context.Background(), syscall.SIGTERM) }()
	<-w.entered
	// The signal handler is writing the report; the phase runner goes on
	// and finishes the run on its side: none of it may change the report,
	// and its Finish waits for the write in progress.
	rec.PhaseFinished("kubelet-start", PhaseSucceeded, "")
	rec.PhaseStarted("static-pods")
	rec.Fail("static-pods", errors.New("late"))
	finished := make(chan error, 1)
	go func() { finished <- rec.Finish(context.Background()) }()
	select {
	case <-finished:
		t.Fatal("Finish returned while the report was still being written")
	case <-time.After(20 * time.Millisecond):
	}
	close(w.release)
	for _, c := range []chan error{interrupted, finished} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()

	r := w.only(t)
	if r.Result != ResultFailed || r.ErrorClass != errclass.Interrupted || r.FailedPhase != "kubelet-start" {
		t.Fatalf("got result %s class %s phase %q", r.Result, r.ErrorClass, r.FailedPhase)
	}
	if r.Error != "interrupted by signal terminated" || r.Hint == "" {
		t.Errorf("error %q hint %q", r.Error, r.Hint)
	}
	if len(r.Phases) != 3 {
		t.Fatalf("phases: %+v", r.Phases)
	}
	if p := r.Phases[1]; p.Name != "kubelet-start" || p.Status != PhaseFailed || p.Message != r.Error {
		t.Errorf("running phase: %+v", p)
	}
	if p := r.Phases[2]; p.Name != "static-pods" || p.Status != PhaseSkipped {
		t.Errorf("later planned phase: %+v", p)
	}
	if len(r.LogTail) == 0 || len(r.LogTail) > DefaultTailLines {
		t.Errorf("tail has %d lines", len(r.LogTail))
	}
}

func TestRecorderRecoverPanic(t *testing.T) {
	w := &memWriter{name: "mem"}
	token := "k3x9qa.0123456789abcdef"
	rec := NewRecorder(testMeta(), []Writer{w}, redact.New(token), nil)
	run := func() (err error) {
		defer rec.Recover(context.Background(), &err)
		rec.PhaseStarted("certs")
		panic("cannot use token " + token)
	}
	err := run()
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Recover must return the panic as an error, got %v", err)
	}
	r := w.only(t)
	if r.ErrorClass != errclass.Internal || r.FailedPhase != "certs" || r.Phases[0].Status != PhaseFailed {
		t.Errorf("panic report: class %s phase %q %+v", r.ErrorClass, r.FailedPhase, r.Phases)
	}
	if strings.Contains(r.Error, token) || strings.Contains(r.Phases[0].Message, token) || r.Error != "panic: cannot use token <redacted>" {
		t.Errorf("panic message not redacted: %q", r.Error)
	}
	if !strings.Contains(strings.Join(r.LogTail, "\n"), "TestRecorderRecoverPanic") {
		t.Errorf("stack missing from the tail: %q", r.LogTail)
	}
	func() {
		var err error
		defer rec.Recover(context.Background(), &err)
	}() // no panic: nothing happens
}

func TestRecorderTailBoundsAndRedaction(t *testing.T) {
	w := &memWriter{name: "mem"}
	key := "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oyq8cNPTPlAcoAoGCCqGSM49\n-----END EC PRIVATE KEY-----"
	rec := NewRecorder(testMeta(), []Writer{w}, redact.New(), nil)
	for i := range 120 {
		rec.AppendOutput(fmt.Sprintf("line %d", i))
	}
	// A key spread over several calls, then an over-long line.
	for _, l := range strings.Split(key, "\n") {
		rec.AppendOutput(l)
	}
	rec.AppendOutput(strings.Repeat("x", 3*MaxTailLineLen) + "\n")
	rec.AppendOutput("two\nlines\r\n")
	rec.Finish(t.Context())
	r := w.only(t)
	if len(r.LogTail) != DefaultTailLines {
		t.Fatalf("tail has %d lines, want %d", len(r.LogTail), DefaultTailLines)
	}
	if r.LogTail[len(r.LogTail)-1] != "lines" || r.LogTail[len(r.LogTail)-2] != "two" {
		t.Errorf("tail end: %q", r.LogTail[len(r.LogTail)-3:])
	}
	long := r.LogTail[len(r.LogTail)-3]
	if len(long) != MaxTailLineLen || !strings.HasSuffix(long, "...") {
		t.Errorf("long line not cut: %d bytes", len(long))
	}
	if strings.Contains(strings.Join(r.LogTail, "\n"), "MHcCAQEEIBkg4LVWM9nuwNSk3yByx") {
		t.Error("PEM body line leaked into the tail")
	}
}

func TestOutputWriter(t *testing.T) {
	w := &memWriter{name: "mem"}
	token := "k3x9qa.0123456789abcdef"
	rec := NewRecorder(testMeta(), []Writer{w}, redact.New(token), nil)
	var tee strings.Builder
	out := rec.OutputWriter(&tee)
	text := "[bootstrap-token] Using token: " + token + "\n[kubelet-start] done\nunterminated " + token
	for i := 0; i < len(text); i += 7 {
		io.WriteString(out, text[i:min(i+7, len(text))])
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	rec.Finish(t.Context())
	r := w.only(t)
	want := []string{"[bootstrap-token] Using token: <redacted>", "[kubelet-start] done", "unterminated <redacted>"}
	if strings.Join(r.LogTail, "|") != strings.Join(want, "|") {
		t.Errorf("tail %q, want %q", r.LogTail, want)
	}
	if strings.Contains(tee.String(), token) || !strings.Contains(tee.String(), "[kubelet-start] done\n") {
		t.Errorf("tee got %q", tee.String())
	}
}

func TestFinishWaitsRespectsContext(t *testing.T) {
	w := &memWriter{name: "slow", delay: 300 * time.Millisecond}
	rec := NewRecorder(testMeta(), []Writer{w}, nil, nil)
	go rec.Finish(context.Background())
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := rec.Finish(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second Finish bounded by its context must give up: %v", err)
	}
}

// A phase's durationMs is rounded to the nearest millisecond, not
// truncated: each reads within 0.5 ms of its time, either way, where
// truncation read up to 1 ms short, 0.5 ms on average.
func TestRecorderDurationRounded(t *testing.T) {
	for _, tc := range []struct {
		step time.Duration
		want int64
	}{{1600 * time.Microsecond, 2}, {1400 * time.Microsecond, 1}, {400 * time.Microsecond, 0}, {1500 * time.Microsecond, 2}} {
		clock := &fakeClock{t: t0, step: tc.step}
		w := &memWriter{name: "mem"}
		rec := NewRecorder(testMeta(), []Writer{w}, nil, clock.now)
		rec.PhaseStarted("preflight")
		rec.PhaseFinished("preflight", PhaseSucceeded, "")
		if err := rec.Finish(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := w.only(t).Phases[0].DurationMs; got != tc.want {
			t.Errorf("a phase of %s: durationMs %d, want %d", tc.step, got, tc.want)
		}
	}
}

// TestRecorderNodeRegistered: a join that registered its Node and then
// failed says so — the Node's name in nodeRegistered and a hint that
// starts by telling the operator to delete it — also in a provisional
// report; a run that succeeds after registering does not.
func TestRecorderNodeRegistered(t *testing.T) {
	w := &memWriter{name: "mem"}
	rec := NewRecorder(testMeta(), []Writer{w}, nil, nil)
	rec.PhaseStarted("kubelet-wait-bootstrap")
	rec.PhaseFinished("kubelet-wait-bootstrap", PhaseSucceeded, "")
	rec.NodeRegistered()
	rec.mu.Lock()
	prov := rec.provisionalLocked()
	rec.mu.Unlock()
	if prov.NodeRegistered != "w1" {
		t.Errorf("provisional report: nodeRegistered %q, want w1", prov.NodeRegistered)
	}
	rec.PhaseStarted("static-pods")
	rec.Fail("static-pods", errclass.New(errclass.HostPreparationFailed, "the manifest must be a valid v1 Pod", errors.New("bad pod")))
	rec.Finish(t.Context())
	r := w.only(t)
	if r.NodeRegistered != "w1" {
		t.Errorf("nodeRegistered %q, want w1", r.NodeRegistered)
	}
	if !strings.HasPrefix(r.Hint, "The Node w1 exists in the cluster") || !strings.Contains(r.Hint, "kubectl delete node w1") || !strings.HasSuffix(r.Hint, "the manifest must be a valid v1 Pod") {
		t.Errorf("hint %q does not start with the Node and keep the phase's hint", r.Hint)
	}

	ok := &memWriter{name: "ok"}
	rec = NewRecorder(testMeta(), []Writer{ok}, nil, nil)
	rec.PhaseStarted("kubelet-wait-bootstrap")
	rec.PhaseFinished("kubelet-wait-bootstrap", PhaseSucceeded, "")
	rec.NodeRegistered()
	rec.Finish(t.Context())
	if r := ok.only(t); r.NodeRegistered != "" || r.Result != ResultSucceeded {
		t.Errorf("successful join: nodeRegistered %q, result %s", r.NodeRegistered, r.Result)
	}
}
