//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
)

// The kills of TestCrash, in the phases of issue 14, item 5, and kubeadm's
// kubeconfig phase, followed by what a kill in the middle of kubeadm's
// write of a kubeconfig leaves.
var (
	crashInitKills = []crashKill{
		{phase: "certs"},
		{phase: "kubeconfig", leave: emptyResumedKubeconfig},
		{phase: "etcd"},
		{phase: "kubelet-start"},
		{phase: "wait-control-plane"},
		{phase: "upload-certs"},
		{phase: "bootstrap-token"},
		{phase: "addon"},
	}
	crashJoinKills = []crashKill{{phase: "preflight"}, {phase: "kubelet-start"}, {phase: "kubelet-wait-bootstrap"}}
)

// crashKill is one kill of a chain: in the top-level phase phase. leave,
// when set, then changes what the kill left on the machine, and returns a
// check of the next run's report.
type crashKill struct {
	phase string
	leave func(t *testing.T, m *Machine, all []string, run *crashRun) func(t *testing.T, r *crashReport)
}

// emptyResumedKubeconfig empties the kubeconfig file of the kubeconfig
// leaf the next run resumes in (the first one the state file does not
// list as completed), the way a kill in the middle of kubeadm's write of
// it leaves it: kubeadm writes a kubeconfig with one plain os.WriteFile
// (client-go clientcmd.WriteToFile), which truncates the file and then
// writes it, so a kill between the two leaves it empty. The test's kill is
// timed by the report, not by kubeadm's write, and cannot land between
// those two calls reliably: the test empties the file itself, after the
// kill. The returned check says the next run removed it before kubeadm
// ran that leaf again (pkg/phases repairInterruptedKubeconfigs: the
// leaf's report message is its first change line) and completed the leaf.
func emptyResumedKubeconfig(t *testing.T, m *Machine, all []string, run *crashRun) func(t *testing.T, r *crashReport) {
	t.Helper()
	leaf := ""
	for _, p := range all {
		if strings.HasPrefix(p, run.phase+"/") && !slices.Contains(run.state.Completed, p) {
			leaf = p
			break
		}
	}
	if leaf == "" {
		// The five kubeconfig leaves take 10-30 ms together; a kill that
		// came after the last of them leaves nothing to cut short. The
		// repair's unit tests (pkg/kubeadm, pkg/phases) run it on every
		// case; here it is exercised when the kill lands before the end.
		t.Logf("%s: every leaf of %s completed before the kill: nothing left to empty, the kubeconfig repair is not exercised in this run", m.Name, run.phase)
		return nil
	}
	file := "/etc/kubernetes/" + strings.TrimPrefix(leaf, run.phase+"/") + ".conf"
	if err := m.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: emptied %s, the kubeconfig of %s, where the next run resumes (what a kill in the middle of kubeadm's write leaves)", m.Name, file, leaf)
	return func(t *testing.T, r *crashReport) {
		t.Helper()
		want := "removed " + file + ": empty (0 bytes), left by an interrupted earlier run of this phase"
		for _, p := range r.Phases {
			if p.Name != leaf {
				continue
			}
			if p.Status != "Succeeded" || !strings.HasPrefix(p.Message, want) {
				t.Errorf("%s: the run after %s was emptied: %s %s %q, want Succeeded with %q", m.Name, file, leaf, p.Status, p.Message, want)
			} else {
				t.Logf("%s: the next run repaired it: %s: %s", m.Name, leaf, p.Message)
			}
			return
		}
		t.Errorf("%s: the run after %s was emptied has no report entry for %s", m.Name, file, leaf)
	}
}

// Bounds of one killed run.
const (
	// crashAttempts bounds the chains of one machine: a chain whose kill
	// came after its phase had ended (a phase of a few milliseconds, such
	// as etcd, on a loaded machine) proves nothing about that phase, so
	// the chain starts again on a freshly booted machine, at most this
	// many times in all.
	crashAttempts     = 3
	crashWatchTimeout = 4 * time.Minute
	crashPoll         = time.Millisecond
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
// succeed. Each kill is timed by observing real progress, never by a hook:
// machineadm rewrites its provisional report (docs/report.md, "Unfinished
// runs") when a top-level phase starts, the test polls the file through
// the machine's root every millisecond and kills the process as soon as
// the report names X as the running phase. That the kill landed inside X
// is then proved by the next run: its report's resumedFrom is X or one of
// X's sub-phases (X had not completed). After every kill the report file
// must not say Succeeded and the Cluster API sentinel must be absent. A
// kill with a leave function is followed by a change to what it left (for
// kubeconfig: the kubeconfig kubeadm was writing, emptied) and a check of
// the next run's report (that it repaired it).
// A kill that came after its phase had ended (the report already named a
// later phase) proves nothing about that phase: the machine's chain starts
// again on a freshly booted machine, logged, at most crashAttempts chains
// in all; a machineadm that never runs the phase fails every chain.
// At the end cp3 and w8 are Ready, the API answers, and both last reports
// are Succeeded with the sentinel written.
func TestCrash(t *testing.T) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	secrets, err := e.makeSecrets(ctx, filepath.Join(e.runDir, "crash-pki"))
	if err != nil {
		t.Fatal(err)
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
				t.Error(err)
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
		t.Fatal(err)
	}
	if err := deliver(mw, wSpec, secrets); err != nil {
		t.Fatal(err)
	}

	t.Run("init", func(t *testing.T) {
		for a := 1; crashChain(ctx, t, mcp, initPhases, crashInitKills); a++ {
			if a == crashAttempts {
				t.Fatalf("%s: in each of %d chains a kill came after its phase had ended", cp3.Name, a)
			}
			mcp = freshCrashMachine(ctx, t, mcp, cp3, cpSpec, secrets, a, nil)
			ms[0] = mcp
		}
	})
	if t.Failed() {
		return
	}
	cs, err := adminClient(mcp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := waitNodesReady(ctx, cs, readyTimeout, cp3.Name); err != nil {
		dumpDiagnostics(ctx, t, mcp)
		t.Fatal(err)
	}
	if v, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("API server of cp3: %v", err)
	} else {
		t.Logf("cp3 Ready; API server answers: %s", v.GitVersion)
	}
	if err := waitStaticPodsRunning(ctx, cs, cp3.Name, podTimeout); err != nil {
		dumpDiagnostics(ctx, t, mcp)
		t.Fatal(err)
	}

	t.Run("worker-join", func(t *testing.T) {
		for a := 1; crashChain(ctx, t, mw, workerJoinPhases, crashJoinKills); a++ {
			if a == crashAttempts {
				t.Fatalf("%s: in each of %d chains a kill came after its phase had ended", w8.Name, a)
			}
			mw = freshCrashMachine(ctx, t, mw, w8, wSpec, secrets, a, cs)
			ms[1] = mw
		}
	})
	if t.Failed() {
		return
	}
	if _, err := waitNodesReady(ctx, cs, readyTimeout, cp3.Name, w8.Name); err != nil {
		dumpDiagnostics(ctx, t, mcp, mw)
		t.Fatal(err)
	}
	t.Logf("w8 joined cp3's cluster and is Ready")
}

// freshCrashMachine replaces m, whose chain had a kill that came too late,
// with a freshly booted machine of the same name (in the run directory's
// subdirectory crash-retry-<attempt>), the spec and its secrets delivered.
// For a worker, cs is its cluster: the Node an earlier attempt may have
// registered is deleted first.
func freshCrashMachine(ctx context.Context, t *testing.T, m *Machine, h hostsEntry, spec *v1alpha1.MachineBootstrapConfig, secrets clusterSecrets, attempt int, cs kubernetes.Interface) *Machine {
	t.Helper()
	t.Logf("%s: chain %d had a kill that came after its phase had ended; starting again on a freshly booted %s", h.Name, attempt, h.Name)
	if err := theEnv.stopMachine(m); err != nil {
		t.Fatal(err)
	}
	if cs != nil {
		if err := deleteNode(ctx, cs, h.Name, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	fresh := theEnv.bootMachinesWith(ctx, t, bootOptions{subdir: fmt.Sprintf("crash-retry-%d", attempt)}, h)[0]
	if err := deliver(fresh, spec, secrets); err != nil {
		t.Fatal(err)
	}
	return fresh
}

// crashChain kills a run in each of kills (top-level phases of all, in
// their order), checks what each kill left, and runs bootstrap a last
// time to success. It returns true, having stopped at once, when a kill
// came too late (the report already named a later phase): the machine is
// then in no state the chain can go on from, and the caller starts again
// on a fresh one.
func crashChain(ctx context.Context, t *testing.T, m *Machine, all []string, kills []crashKill) (late bool) {
	for _, k := range kills {
		if !slices.Contains(all, k.phase) {
			t.Fatalf("phase %q is not a phase of this workflow: %v", k.phase, all)
		}
	}
	var prev *crashRun
	var check func(t *testing.T, r *crashReport) // of what the previous kill's leave changed
	for i, k := range kills {
		run := killIn(ctx, t, m, all, k.phase, i, prev != nil)
		if run.late {
			return true
		}
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
		t.Fatal(err)
	}
	if res.ExitCode != 0 || r.Result != "Succeeded" {
		dumpDiagnostics(ctx, t, m)
		t.Fatalf("%s: the run after the kill in %s exited %d: %s", m.Name, prev.phase, res.ExitCode, r.summary())
	}
	for _, p := range r.Phases {
		if p.Status == "Failed" {
			t.Errorf("%s: final report Succeeded with phase %s Failed", m.Name, p.Name)
		}
	}
	checkResumedIn(t, m, r, prev.phase)
	logRecovery(t, m, r, prev.phase)
	if check != nil {
		check(t, r)
	}
	if res, _ := m.Exec(ctx, nil, "test", "-f", sentinelPath); res.ExitCode != 0 {
		t.Errorf("%s: no success sentinel %s after the successful run", m.Name, sentinelPath)
	}
	t.Logf("%s: run %d (not killed) succeeded in %s, resumed at %s", m.Name, prev.n+1, time.Since(start).Round(100*time.Millisecond), r.ResumedFrom)
	return false
}

// crashRun is one run killed in phase.
type crashRun struct {
	phase  string         // the top-level phase it was killed in
	report *crashReport   // the report file after the kill
	state  phaseStateFile // the state file after the kill
	n      int            // the run's number on its machine, from 1
	late   bool           // the kill came when a later phase was running
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

// reportStamp identifies one version of the report file.
type reportStamp struct {
	ino, size    int64
	ctime, mtime syscall.Timespec
}

func stampOf(fi os.FileInfo) reportStamp {
	st := fi.Sys().(*syscall.Stat_t)
	return reportStamp{ino: int64(st.Ino), size: st.Size, ctime: st.Ctim, mtime: st.Mtim}
}

// killIn runs `machineadm bootstrap` in m and SIGKILLs it as soon as its
// provisional report says that phase runs — for a run that resumes an
// earlier killed one, once the report also says where it resumed: a run
// killed again in the phase it resumes in rewrites its report when that
// top-level phase starts and again, with resumedFrom, when it reaches the
// first leaf not completed. It fails the test when the run ends first.
// When the report already shows a later phase, the run is killed all the
// same and returned with late set: the kill was not in phase.
//
// The watch runs on its own OS thread at nice -20 (best effort; the test
// runs as root), so that on a loaded machine it gets the CPU as soon as
// its poll interval ends: the kill must land inside phases of a few
// milliseconds.
func killIn(ctx context.Context, t *testing.T, m *Machine, all []string, phase string, i int, resumes bool) *crashRun {
	t.Helper()
	runtime.LockOSThread()
	tid := unix.Gettid()
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, -20); err != nil {
		t.Logf("watch thread priority: %v (the watch runs at normal priority)", err)
	}
	defer func() {
		_ = unix.Setpriority(unix.PRIO_PROCESS, tid, 0)
		runtime.UnlockOSThread()
	}()
	reportFile := filepath.Join(m.Root, reportPath)
	// A report rewrite is a new file renamed over the old one; its inode
	// number alone does not tell them apart, since the file system may
	// give the new file the number just freed (seen on the machines'
	// overlayfs: whole phases went unseen). The inode with its change and
	// modification times (ns) and size does.
	var before reportStamp
	if fi, err := os.Stat(reportFile); err == nil {
		before = stampOf(fi)
	}
	// machineadm at nice 19, the watch at nice -20 (below): on a loaded
	// machine machineadm's phases then widen instead of the watch falling
	// behind them; on an idle one neither waits for the other.
	cmd, out := m.start(ctx, "nice", "-n", "19", "machineadm", "bootstrap", "-f", machineSpecFile)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = os.WriteFile(filepath.Join(m.Dir, fmt.Sprintf("bootstrap-crash-%d.log", i)), out.Bytes(), 0o600)
	}()
	want := slices.Index(all, phase)
	late := false
	pid := 0
	var seen string
	deadline := time.Now().Add(crashWatchTimeout)
	for {
		select {
		case err := <-exited:
			t.Fatalf("%s: bootstrap ended (%v) before phase %s started (last running phase seen: %q); output tail:\n%s", m.Name, err, phase, seen, tail(out.String(), 40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: phase %s did not start within %s (last seen: %q, machineadm pid %d)", m.Name, phase, crashWatchTimeout, seen, pid)
		}
		if pid == 0 {
			// machineadm itself, below sh, nsenter and env; its first
			// report is written after it started.
			if pid = findProcess(cmd.Process.Pid, "machineadm"); pid == 0 {
				time.Sleep(crashPoll)
				continue
			}
		}
		fi, err := os.Stat(reportFile)
		if err != nil || stampOf(fi) == before {
			time.Sleep(crashPoll)
			continue
		}
		before = stampOf(fi)
		r, err := readCrashReport(m)
		if err != nil || r.Result == "Succeeded" {
			// Only the provisional report appears while the run goes on.
			t.Fatalf("%s: report during the run: %v %+v", m.Name, err, r)
		}
		seen = r.FailedPhase
		top, _, _ := strings.Cut(seen, "/")
		if got := slices.Index(all, top); got > want || (got == want && (!resumes || r.ResumedFrom != "")) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill %d: %v", pid, err)
			}
			after := time.Since(start)
			<-exited
			if got > want {
				t.Logf("%s: run %d: the kill came too late (%s after its start): phase %s was already running, not %s", m.Name, i+1, after.Round(time.Millisecond), seen, phase)
				late = true
				break
			}
			t.Logf("%s: run %d killed (SIGKILL, pid %d) %s after its start, with %s running", m.Name, i+1, pid, after.Round(time.Millisecond), seen)
			timing(t, fmt.Sprintf("crash-%s-%s-killed-after", m.Name, phase), after)
			break
		}
		time.Sleep(crashPoll)
	}
	if late {
		return &crashRun{phase: phase, n: i + 1, late: true}
	}
	// What the kill left behind.
	r, err := readCrashReport(m)
	if err != nil {
		t.Fatal(err)
	}
	if top, _, _ := strings.Cut(r.FailedPhase, "/"); slices.Index(all, top) > want {
		// The signal was on its way while the phase ended: the last report
		// before the process died names a later phase.
		t.Logf("%s: run %d: the kill came too late: it was sent in %s, and the run had reached %s when it died", m.Name, i+1, phase, r.FailedPhase)
		return &crashRun{phase: phase, n: i + 1, late: true}
	}
	var st phaseStateFile
	if b, err := m.ReadFile(statePathOnHost); err == nil {
		if st, err = parseStateJournal(b); err != nil {
			t.Errorf("%s: state file: %v", m.Name, err)
		}
	}
	return &crashRun{phase: phase, report: r, state: st, n: i + 1}
}

// checkNoSuccessClaim: after a kill, the report is the provisional one
// (Failed, Interrupted, naming the phase), the state file records no
// finished run, and there is no Cluster API sentinel.
func checkNoSuccessClaim(ctx context.Context, t *testing.T, m *Machine, run *crashRun) {
	t.Helper()
	r := run.report
	top, _, _ := strings.Cut(r.FailedPhase, "/")
	if r.Result == "Succeeded" || r.ErrorClass != "Interrupted" || top != run.phase || !strings.Contains(r.Error, "unfinished run") {
		t.Errorf("%s: report after the kill in %s: result=%s errorClass=%s failedPhase=%s error=%q", m.Name, run.phase, r.Result, r.ErrorClass, r.FailedPhase, r.Error)
	}
	if run.state.FinishedAt != "" {
		t.Errorf("%s: state file says finished (%s) after the kill in %s", m.Name, run.state.FinishedAt, run.phase)
	}
	res, _ := m.Exec(ctx, nil, "test", "-e", sentinelPath)
	if res.ExitCode == 0 {
		t.Errorf("%s: success sentinel %s present after the kill in %s", m.Name, sentinelPath, run.phase)
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
		t.Errorf("%s: the run after the kill in %s resumed at %q, want %s or one of its sub-phases", m.Name, phase, r.ResumedFrom, phase)
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

// findProcess returns the host PID of the first process below pid whose
// command name is comm, or 0.
func findProcess(pid int, comm string) int {
	for _, p := range descendants(pid) {
		if c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); strings.TrimSpace(string(c)) == comm {
			return p
		}
	}
	return 0
}
