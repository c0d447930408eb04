//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	"github.com/machineadm/machineadm/pkg/report"
)

// The kills of TestCrash, in the phases of issue 14, item 5, and kubeadm's
// kubeconfig phase. Each is placed at an open of the run (killIn): by
// default its first open of the phase's own work; in certs at the write of
// the fourth leaf's journal record (three leaves recorded, the fourth's
// certificate written but not recorded); in kubeconfig at kubeadm's open of
// the second kubeconfig it writes, which the kernel has just created empty.
var (
	crashInitKills = []crashKill{
		{phase: "certs", at: killPoint{match: isStateJournal, skip: 3, what: "the fourth leaf's journal record"}},
		{phase: "kubeconfig", at: killPoint{match: isKubeconfigFile, skip: 1, what: "kubeadm's write of its second kubeconfig"}, leave: cutKubeconfig},
		{phase: "etcd"},
		{phase: "kubelet-start"},
		{phase: "wait-control-plane"},
		{phase: "upload-certs"},
		{phase: "bootstrap-token"},
		{phase: "addon"},
	}
	crashJoinKills = []crashKill{{phase: "preflight"}, {phase: "kubelet-start"}, {phase: "kubelet-wait-bootstrap"}}
)

// crashKill is one kill of a chain: in the top-level phase phase, at the
// open at selects (the zero value: phaseWork's first). leave, when set,
// then checks what the kill left on the machine, and returns a check of
// the next run's report.
type crashKill struct {
	phase string
	at    killPoint
	leave func(t *testing.T, m *Machine, all []string, run *crashRun) func(t *testing.T, r *crashReport)
}

// killPoint selects the open of machineadm, once its report names the
// phase, at which it is killed: the one after skip opens that match
// (paths in the machine's view). The zero value is phaseWork with skip 0.
type killPoint struct {
	match func(path string) bool
	skip  int
	what  string
}

func (k killPoint) orDefault() killPoint {
	if k.match == nil {
		return killPoint{match: phaseWork, what: "its first open for the phase's work"}
	}
	return k
}

// phaseWork matches the opens of a phase's work: a file outside
// machineadm's own inputs (/etc/machineadm) and bookkeeping
// (/var/lib/machineadm: kubeadm's configuration file, read again by every
// kubeadm leaf before it works, reports, patches), or the state journal,
// whose record ends every leaf: a phase cannot complete without one.
func phaseWork(path string) bool {
	own := strings.HasPrefix(path, "/etc/machineadm/") || strings.HasPrefix(path, "/var/lib/machineadm/")
	return !own || isStateJournal(path)
}

// isStateJournal matches the state journal's appends (a rewrite goes
// through a temporary file, pkg/atomicfile).
func isStateJournal(path string) bool {
	return path == statePathOnHost || strings.HasPrefix(path, filepath.Join(filepath.Dir(statePathOnHost), "."+filepath.Base(statePathOnHost)+".tmp-"))
}

// isKubeconfigFile matches kubeadm's kubeconfig files in /etc/kubernetes.
func isKubeconfigFile(path string) bool {
	return filepath.Dir(path) == "/etc/kubernetes" && strings.HasSuffix(path, ".conf")
}

// cutKubeconfig checks what the kill at kubeadm's open of a kubeconfig
// left: that kubeconfig, of the leaf the next run resumes in (the first
// one the state file does not list as completed), empty. kubeadm writes a
// kubeconfig with one plain os.WriteFile (client-go clientcmd.WriteToFile):
// the open creates the file, the process dies there, nothing is written.
// The returned check says the next run removed it before kubeadm ran that
// leaf again (pkg/phases repairInterruptedKubeconfigs: the leaf's report
// message is its first change line) and completed the leaf.
func cutKubeconfig(t *testing.T, m *Machine, all []string, run *crashRun) func(t *testing.T, r *crashReport) {
	t.Helper()
	leaf := ""
	for _, p := range all {
		if strings.HasPrefix(p, run.phase+"/") && !slices.Contains(run.state.Completed, p) {
			leaf = p
			break
		}
	}
	if leaf == "" {
		errorf(t, "%s: every leaf of %s completed before the kill in it (state: %v)", m.Name, run.phase, run.state.Completed)
		return nil
	}
	file := "/etc/kubernetes/" + strings.TrimPrefix(leaf, run.phase+"/") + ".conf"
	if run.killedAt != file {
		errorf(t, "%s: the kill in %s was at %s, want %s, the kubeconfig of %s where the next run resumes", m.Name, run.phase, run.killedAt, file, leaf)
		return nil
	}
	b, err := m.ReadFile(file)
	if err != nil || len(b) != 0 {
		errorf(t, "%s: after the kill at kubeadm's open of %s: %d bytes, %v; want an empty file", m.Name, file, len(b), err)
		return nil
	}
	t.Logf("%s: the kill left %s empty, the kubeconfig of %s, where the next run resumes", m.Name, file, leaf)
	return func(t *testing.T, r *crashReport) {
		t.Helper()
		want := "removed " + file + ": empty (0 bytes), left by an interrupted earlier run of this phase"
		for _, p := range r.Phases {
			if p.Name != leaf {
				continue
			}
			if p.Status != "Succeeded" || !strings.HasPrefix(p.Message, want) {
				errorf(t, "%s: the run after the kill that left %s empty: %s %s %q, want Succeeded with %q", m.Name, file, leaf, p.Status, p.Message, want)
			} else {
				t.Logf("%s: the next run repaired it: %s: %s", m.Name, leaf, p.Message)
			}
			return
		}
		errorf(t, "%s: the run after the kill that left %s empty has no report entry for %s", m.Name, file, leaf)
	}
}

// Bounds of one killed run.
const (
	crashWatchTimeout = 4 * time.Minute
	sentinelPath      = "/run/cluster-api/bootstrap-success.complete"
	statePathOnHost   = "/var/lib/machineadm/state.jsonl"
)

// TestCrash kills machineadm with SIGKILL in the middle of a phase and
// runs `machineadm bootstrap` again, for each kill of crashInitKills on
// one control-plane machine (cp3, an Init) and then of crashJoinKills on
// one worker (w8) joining it.
//
// The kills are chained on each machine: the run after a kill in phase X
// resumes in X, completes it and everything up to the next phase of the
// list, where it is killed in turn; the last run is not killed and must
// succeed. Each kill is placed by real progress, never by a hook in
// machineadm: machineadm rewrites its provisional report (docs/report.md,
// "Unfinished runs") when a top-level phase starts, and while it runs the
// test holds each of its file opens on the machine's root (fanotify,
// killIn) until it has read the latest report; at the first open after
// the report named X that killIn's point selects, the process is killed
// where it stands. That the kill
// landed inside X is then proved by the next run: its report's resumedFrom
// is X or one of X's sub-phases (X had not completed). After every kill
// the report file must not say Succeeded and the Cluster API sentinel must
// be absent. A kill with a leave function is followed by a check of what
// it left (for kubeconfig: the kubeconfig kubeadm was writing, empty) and
// of the next run's report (that it repaired it).
// A kill that came after its phase had ended (the report already named a
// later phase) fails the test: with the held opens it would be a defect of
// the gate, and retrying would hide it.
// At the end cp3 and w8 are Ready, the API answers, and both last reports
// are Succeeded with the sentinel written.
func TestCrash(t *testing.T) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	secrets, err := e.makeSecrets(ctx, filepath.Join(e.runDir, "crash-pki"))
	if err != nil {
		fatalln(t, err)
	}
	start := time.Now()
	ms := e.bootMachines(ctx, t, cp3, w8)
	timing(t, "crash-boot-cp3-w8", time.Since(start))
	mcp, mw := ms[0], ms[1]
	defer func() {
		if t.Failed() && e.keep {
			return // kept for MACHINEADM_E2E_KEEP; TestMain's teardown stops them
		}
		for _, m := range ms {
			if err := e.stopMachine(m); err != nil {
				errorln(t, err)
			}
		}
	}()

	endpoint := cp3.IP + ":6443"
	cpSpec := controlPlaneSpec(cp3, v1alpha1.ActionInit, "")
	cpSpec.Spec.Kubernetes.ControlPlaneEndpoint = endpoint
	wSpec := workerSpec(w8, secrets.caHash)
	wSpec.Spec.Kubernetes.ControlPlaneEndpoint = endpoint
	wSpec.Spec.Join.APIServerEndpoint = endpoint
	if err := deliver(mcp, cpSpec, secrets); err != nil {
		fatalln(t, err)
	}
	if err := deliver(mw, wSpec, secrets); err != nil {
		fatalln(t, err)
	}

	t.Run("init", func(t *testing.T) { crashChain(ctx, t, mcp, initPhases, crashInitKills) })
	if t.Failed() {
		return
	}
	cs, err := adminClient(mcp)
	if err != nil {
		fatalln(t, err)
	}
	if _, err := waitNodesReady(ctx, cs, readyTimeout, cp3.Name); err != nil {
		dumpDiagnostics(ctx, t, mcp)
		fatalln(t, err)
	}
	if v, err := cs.Discovery().ServerVersion(); err != nil {
		fatalf(t, "API server of cp3: %v", err)
	} else {
		t.Logf("cp3 Ready; API server answers: %s", v.GitVersion)
	}
	if err := waitStaticPodsRunning(ctx, cs, cp3.Name, podTimeout); err != nil {
		dumpDiagnostics(ctx, t, mcp)
		fatalln(t, err)
	}

	t.Run("worker-join", func(t *testing.T) { crashChain(ctx, t, mw, workerJoinPhases, crashJoinKills) })
	if t.Failed() {
		return
	}
	if _, err := waitNodesReady(ctx, cs, readyTimeout, cp3.Name, w8.Name); err != nil {
		dumpDiagnostics(ctx, t, mcp, mw)
		fatalln(t, err)
	}
	t.Logf("w8 joined cp3's cluster and is Ready")
}

// crashChain kills a run in each of kills (top-level phases of all, in
// their order), checks what each kill left, and runs bootstrap a last
// time to success.
func crashChain(ctx context.Context, t *testing.T, m *Machine, all []string, kills []crashKill) {
	for _, k := range kills {
		if !slices.Contains(all, k.phase) {
			fatalf(t, "phase %q is not a phase of this workflow: %v", k.phase, all)
		}
	}
	var prev *crashRun
	var check func(t *testing.T, r *crashReport) // of what the previous kill's leave changed
	for i, k := range kills {
		run := killIn(ctx, t, m, all, k.phase, k.at.orDefault(), i, prev != nil)
		if prev != nil {
			checkResumedIn(t, m, run.report, prev.phase)
			logRecovery(t, m, run.report, prev.phase)
		}
		if check != nil {
			check(t, run.report)
			check = nil
		}
		checkNoSuccessClaim(ctx, t, m, run)
		if k.leave != nil {
			check = k.leave(t, m, all, run)
		}
		prev = run
	}
	// The last run is not killed: it resumes in the last killed phase and
	// finishes.
	start := time.Now()
	res, dur := bootstrap(ctx, t, m)
	timing(t, fmt.Sprintf("crash-%s-final-rerun", m.Name), dur)
	r, err := readCrashReport(m)
	if err != nil {
		fatalln(t, err)
	}
	if res.ExitCode != 0 || r.Result != "Succeeded" {
		dumpDiagnostics(ctx, t, m)
		fatalf(t, "%s: the run after the kill in %s exited %d: %s", m.Name, prev.phase, res.ExitCode, r.summary())
	}
	for _, p := range r.Phases {
		if p.Status == "Failed" {
			errorf(t, "%s: final report Succeeded with phase %s Failed", m.Name, p.Name)
		}
	}
	checkResumedIn(t, m, r, prev.phase)
	logRecovery(t, m, r, prev.phase)
	if check != nil {
		check(t, r)
	}
	if res, _ := m.Exec(ctx, nil, "test", "-f", sentinelPath); res.ExitCode != 0 {
		errorf(t, "%s: no success sentinel %s after the successful run", m.Name, sentinelPath)
	}
	t.Logf("%s: run %d (not killed) succeeded in %s, resumed at %s", m.Name, prev.n+1, time.Since(start).Round(100*time.Millisecond), r.ResumedFrom)
}

// crashRun is one run killed in phase.
type crashRun struct {
	phase  string         // the top-level phase it was killed in
	report *crashReport   // the report file after the kill
	state  phaseStateFile // the state file after the kill
	n      int            // the run's number on its machine, from 1
	// killedAt is the path (the machine's view) whose open the kill
	// stopped.
	killedAt string
}

// crashReport is outcomeReport with the fields only TestCrash reads.
type crashReport struct {
	outcomeReport
	ResumedFrom string `json:"resumedFrom"`
}

// phaseStateFile is the part of machineadm's state file the test reads.
type phaseStateFile struct {
	Completed  []string
	FinishedAt string
}

// parseStateJournal reads machineadm's state journal (JSON Lines: a
// header naming the spec, then one record per completed leaf and one when
// the run finished). After a SIGKILL every line must be whole: records
// are written with one write each.
func parseStateJournal(b []byte) (phaseStateFile, error) {
	var st phaseStateFile
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return st, fmt.Errorf("the state journal does not end with a whole line: %q", tail(string(b), 1))
	}
	for i, l := range lines {
		var r struct {
			SpecDigest string `json:"specDigest"`
			Completed  string `json:"completed"`
			FinishedAt string `json:"finishedAt"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			return st, fmt.Errorf("state journal line %d: %w", i+1, err)
		}
		if (i == 0) != (r.SpecDigest != "") {
			return st, fmt.Errorf("state journal line %d: %q: the header must be the first line, and only it", i+1, l)
		}
		if r.Completed != "" {
			st.Completed = append(st.Completed, r.Completed)
		}
		if r.FinishedAt != "" {
			st.FinishedAt = r.FinishedAt
		}
	}
	return st, nil
}

// killIn runs `machineadm bootstrap` in m and SIGKILLs it inside phase:
// at its first open of a file on the machine's root file system after its
// provisional report named phase as running — for a run that resumes an
// earlier killed one, once the report also says where it resumed (such a
// run rewrites its report when the top-level phase starts and again, with
// resumedFrom, when it reaches the first leaf not completed). It fails the
// test when the run ends first.
//
// The kill is placed, not raced: an open gate (openGate, fanotify) holds
// every open on the machine's root while the test decides, so machineadm
// is stopped in the kernel at that open when the signal is sent, however
// loaded the machine is. The report versions are read through the files
// the gate hands over for machineadm's opens of its report's temporary
// files (pkg/atomicfile: a new file renamed over the report), which hold
// each version's content once machineadm has gone on to its next open.
// Every leaf of a phase ends with an open of the state journal, so the
// phase cannot complete unseen. When the report already names a later
// phase, or the run had reached one when it died, the run is killed all
// the same and the test fails: the kill was not in phase.
func killIn(ctx context.Context, t *testing.T, m *Machine, all []string, phase string, at killPoint, i int, resumes bool) *crashRun {
	t.Helper()
	return killInRun(ctx, t, m, bootstrapCrashCmd, all, phase, at, i, resumes)
}

// crashCmd is a machineadm command that TestCrash's kills can stop: its
// command line and the machine path of its state journal.
type crashCmd struct {
	args  []string
	state string
}

// bootstrapCrashCmd is `machineadm bootstrap`.
var bootstrapCrashCmd = crashCmd{args: []string{"machineadm", "bootstrap", "-f", machineSpecFile}, state: statePathOnHost}

// killInRun is killIn for the command c (bootstrap, upgrade), whose
// workflow has the top-level phases all.
func killInRun(ctx context.Context, t *testing.T, m *Machine, c crashCmd, all []string, phase string, at killPoint, i int, resumes bool) *crashRun {
	t.Helper()
	args := c.args
	gate, err := newOpenGate(m.Root)
	if err != nil {
		fatalf(t, "%s: %v", m.Name, err)
	}
	watched := make(chan crashVerdict, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchGate(gate, slices.Index(all, phase), all, at, resumes, watched)
	}()
	closeGate := func() {
		_ = gate.Close()
		<-done
	}
	cmd, out := m.start(ctx, args...)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		closeGate()
		fatalln(t, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = os.WriteFile(filepath.Join(m.Dir, fmt.Sprintf("%s-crash-%d.log", args[1], i)), out.Bytes(), 0o600)
	}()
	timeout := time.NewTimer(crashWatchTimeout)
	defer timeout.Stop()
	var v crashVerdict
	var after time.Duration
	select {
	case err := <-exited:
		// The kill's own exit can be seen first: watchGate sends its
		// verdict right after the kill.
		after = time.Since(start)
		select {
		case v = <-watched:
		case <-time.After(5 * time.Second):
			closeGate()
			fatalf(t, "%s: machineadm %s ended (%v) before phase %s started; output tail:\n%s", m.Name, args[1], err, phase, tail(out.String(), 40))
		}
	case <-timeout.C:
		closeGate()
		fatalf(t, "%s: phase %s did not start within %s", m.Name, phase, crashWatchTimeout)
	case v = <-watched:
		after = time.Since(start)
		if v.err != nil {
			// The watch failed, machineadm was not killed, and an open
			// the watch could not answer may hold it: closing the gate
			// answers every open still waiting, instead of waiting here
			// for an exit that may never come.
			closeGate()
			fatalf(t, "%s: run %d: watching for phase %s: %v", m.Name, i+1, phase, v.err)
		}
		<-exited
	}
	closeGate()
	if v.err != nil {
		fatalf(t, "%s: run %d: watching for phase %s: %v", m.Name, i+1, phase, v.err)
	}
	if v.late {
		fatalf(t, "%s: run %d: the kill came too late (%s after its start): phase %s was already running, not %s", m.Name, i+1, after.Round(time.Millisecond), v.seen, phase)
	}
	t.Logf("%s: run %d killed (SIGKILL, pid %d) %s after its start, with %s running, at its open of %s (%s)", m.Name, i+1, v.pid, after.Round(time.Millisecond), v.seen, v.at, at.what)
	timing(t, fmt.Sprintf("crash-%s-%s-killed-after", m.Name, phase), after)
	// What the kill left behind.
	r, err := readCrashReport(m)
	if err != nil {
		fatalln(t, err)
	}
	if top, _, _ := strings.Cut(r.FailedPhase, "/"); slices.Index(all, top) > slices.Index(all, phase) {
		// Another of machineadm's threads wrote a later report while the
		// signal was on its way.
		fatalf(t, "%s: run %d: the kill came too late: it was sent in %s, and the run had reached %s when it died", m.Name, i+1, phase, r.FailedPhase)
	}
	var st phaseStateFile
	if b, err := m.ReadFile(c.state); err == nil {
		if st, err = parseStateJournal(b); err != nil {
			errorf(t, "%s: state file: %v", m.Name, err)
		}
	}
	return &crashRun{phase: phase, report: r, state: st, n: i + 1, killedAt: v.at}
}

// crashVerdict is what watchGate decided: machineadm (pid) was killed at
// its open of at, its last report naming seen as running; late when seen
// is a phase after the one wanted. err when the watch failed first.
type crashVerdict struct {
	pid      int
	seen, at string
	late     bool
	err      error
}

// reportTemp tells machineadm's opens of its report's temporary files
// (atomicfile's ".report.json.tmp-*" beside reportPath) from its others,
// by the path the gate gives (the machine's own view of it).
func reportTemp(path string) bool {
	return strings.HasSuffix(filepath.Dir(path), filepath.Dir(reportPath)) && strings.HasPrefix(filepath.Base(path), "."+filepath.Base(reportPath)+".tmp-")
}

// watchGate answers the gate's opens until it is closed. Opens by other
// processes are allowed at once; machineadm's are allowed until its latest
// report version names the top-level phase all[want] (with resumedFrom
// set, when resumes) or a later one. That open is denied after machineadm
// is sent SIGKILL, and the verdict sent on watched (once).
func watchGate(g *openGate, want int, all []string, at killPoint, resumes bool, watched chan<- crashVerdict) {
	buf := make([]byte, 64*unix.FAN_EVENT_METADATA_LEN)
	run := 0               // machineadm's PID
	held := -1             // the gate's file of machineadm's latest report version
	var heldR *crashReport // its content, once parsed: a version never changes after its rename
	defer func() {
		if held >= 0 {
			unix.Close(held)
		}
	}()
	decided := false
	verdict := func(v crashVerdict) {
		if !decided {
			decided = true
			watched <- v
		}
	}
	for {
		opens, err := g.next(buf)
		if errors.Is(err, os.ErrClosed) {
			return
		}
		if err != nil {
			verdict(crashVerdict{err: err})
		}
		for _, o := range opens {
			// machineadm is the first process seen under that name: it
			// opens files first as nsenter and env (the same PID before
			// each exec), and later children it forks carry its name
			// until their own exec (of /usr/bin/kubelet, say).
			if run == 0 && commOf(o.pid) == "machineadm" {
				run = o.pid
			}
			ma := o.pid == run
			if !ma || decided {
				_ = g.decide(o, true)
				continue
			}
			// The version held was complete before this open: machineadm
			// writes and renames a report before it goes on.
			if heldR == nil {
				heldR = heldReport(held)
			}
			if r := heldR; r != nil {
				top, _, _ := strings.Cut(r.FailedPhase, "/")
				got := slices.Index(all, top)
				hit := got == want && (!resumes || r.ResumedFrom != "") && at.match(o.path)
				if hit && at.skip > 0 {
					at.skip--
					hit = false
				}
				if got > want || hit {
					kerr := syscall.Kill(o.pid, syscall.SIGKILL)
					_ = g.decide(o, false)
					if kerr != nil {
						verdict(crashVerdict{err: fmt.Errorf("kill %d: %w", o.pid, kerr)})
						continue
					}
					verdict(crashVerdict{pid: o.pid, seen: r.FailedPhase, at: o.path, late: got > want})
					continue
				}
			}
			if reportTemp(o.path) {
				if held >= 0 {
					unix.Close(held)
				}
				heldR = nil
				// The gate's file is released by decide: keep a copy.
				if held, err = unix.Dup(int(o.fd)); err != nil {
					held = -1
					_ = g.decide(o, true)
					verdict(crashVerdict{err: fmt.Errorf("dup: %w", err)})
					continue
				}
			}
			_ = g.decide(o, true)
		}
	}
}

// heldReport reads the report version of fd (a file the gate handed over:
// reading it opens nothing, so it cannot wait at the gate itself), nil
// when there is none, it is larger than a report can be
// (report.MaxReportSize) or it does not parse (machineadm had not finished
// writing it: not expected, see watchGate). It is read at every open of
// machineadm: its size comes from the file, not a fixed buffer.
func heldReport(fd int) *crashReport {
	if fd < 0 {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Size <= 0 || st.Size > report.MaxReportSize {
		return nil
	}
	b := make([]byte, st.Size+1)
	n, err := unix.Pread(fd, b, 0)
	if err != nil || n == 0 || n == len(b) {
		return nil
	}
	var r crashReport
	if json.Unmarshal(b[:n], &r) != nil {
		return nil
	}
	return &r
}

// checkNoSuccessClaim: after a kill, the report is the provisional one
// (Failed, Interrupted, naming the phase), the state file records no
// finished run, and there is no Cluster API sentinel.
func checkNoSuccessClaim(ctx context.Context, t *testing.T, m *Machine, run *crashRun) {
	t.Helper()
	r := run.report
	top, _, _ := strings.Cut(r.FailedPhase, "/")
	if r.Result == "Succeeded" || r.ErrorClass != "Interrupted" || top != run.phase || !strings.Contains(r.Error, "unfinished run") {
		errorf(t, "%s: report after the kill in %s: result=%s errorClass=%s failedPhase=%s error=%q", m.Name, run.phase, r.Result, r.ErrorClass, r.FailedPhase, r.Error)
	}
	if run.state.FinishedAt != "" {
		errorf(t, "%s: state file says finished (%s) after the kill in %s", m.Name, run.state.FinishedAt, run.phase)
	}
	res, _ := m.Exec(ctx, nil, "test", "-e", sentinelPath)
	if res.ExitCode == 0 {
		errorf(t, "%s: success sentinel %s present after the kill in %s", m.Name, sentinelPath, run.phase)
	}
	var done []string
	for _, c := range run.state.Completed {
		if c == run.phase || strings.HasPrefix(c, run.phase+"/") {
			done = append(done, c)
		}
	}
	t.Logf("%s: after the kill in %s: report %s/%s failedPhase=%s, %d leaves completed (in %s: %v), no sentinel", m.Name, run.phase, r.Result, r.ErrorClass, r.FailedPhase, len(run.state.Completed), run.phase, done)
}

// checkResumedIn: the run after a kill in phase resumed inside phase,
// which proves that the kill left phase unfinished.
func checkResumedIn(t *testing.T, m *Machine, r *crashReport, phase string) {
	t.Helper()
	if r.ResumedFrom != phase && !strings.HasPrefix(r.ResumedFrom, phase+"/") {
		errorf(t, "%s: the run after the kill in %s resumed at %q, want %s or one of its sub-phases", m.Name, phase, r.ResumedFrom, phase)
	}
}

// logRecovery logs how long the rerun spent in the phase it resumed in
// (the report's entry for that top-level phase, once it finished).
func logRecovery(t *testing.T, m *Machine, r *crashReport, phase string) {
	t.Helper()
	for _, p := range r.Phases {
		if p.Name == phase && p.Status != "Failed" {
			t.Logf("%s: rerun resumed at %s, finished %s (%s) in %dms", m.Name, r.ResumedFrom, phase, p.Status, p.DurationMs)
			timing(t, fmt.Sprintf("crash-%s-%s-rerun-phase", m.Name, phase), time.Duration(p.DurationMs)*time.Millisecond)
			return
		}
	}
}

// readCrashReport reads the report file of m with resumedFrom.
func readCrashReport(m *Machine) (*crashReport, error) {
	_, raw, err := readReport(m)
	if err != nil {
		return nil, err
	}
	var r crashReport
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// start prepares a command in the machine like Exec, without running it,
// its output collected in the returned buffer.
func (m *Machine) start(ctx context.Context, args ...string) (*exec.Cmd, *bytes.Buffer) {
	full := append([]string{"-c", `for d in $MAE2E_CGROUPS; do echo $$ >"$d/cgroup.procs"; done; exec "$@"`, "sh",
		"nsenter", "-t", strconv.Itoa(m.leader), "-a", "--", "/usr/bin/env", "-i",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"}, args...)
	cmd := exec.CommandContext(ctx, "/bin/sh", full...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "MAE2E_CGROUPS=" + strings.Join(m.cgroups, " ")}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	return cmd, &out
}
