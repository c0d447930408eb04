//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
	"github.com/machineadm/machineadm/pkg/phases"
	"github.com/machineadm/machineadm/pkg/session"
)

// The two tools the benchmark compares.
const (
	toolKubeadm    = "kubeadm"
	toolMachineadm = "machineadm"
)

// Bounds of the benchmark.
const (
	benchTimeout     = 80 * time.Minute
	benchReadyPoll   = 100 * time.Millisecond
	benchSettle      = 3 * time.Second // after prepare restarted containerd
	machineKubeadm   = "/usr/local/bin/kubeadm"
	machineWorkDir   = "/var/lib/machineadm"
	benchTargetWall  = 1.05
	benchTargetOut   = 100 * time.Millisecond
	benchTargetRSS   = 1.10
	benchDefaultRuns = 5
)

// benchSample is one measured bootstrap.
type benchSample struct {
	// wall is from the command's start to the Node's Ready condition, as
	// seen by polling the API server every benchReadyPoll.
	wall time.Duration
	// exec is the command's own run time.
	exec time.Duration
	// rssKiB is the command's peak resident set (ru_maxrss of its process
	// tree, KiB).
	rssKiB int64
	// outside is machineadm's run time outside kubeadm's phases: exec
	// minus the report's durations of kubeadm's leaf phases.
	outside time.Duration
	// own are the report's durations of machineadm's own phases.
	own map[string]time.Duration
	// span is the report's endTime - startTime: from the run's record
	// starting (after the spec was read and checked) to the final
	// report's writers starting.
	span time.Duration
	// beforeSpan is from the command's start (here, before the harness's
	// exec) to the report's startTime: the harness's exec, process start,
	// reading and checking the spec, the run lock. exec - span - beforeSpan
	// is after the span: the final writers, then the log file's close and
	// process exit.
	beforeSpan time.Duration
	// versionExec is a `machineadm version` run in the same machine right
	// after the sample: process start and exit of the binary and the
	// harness's own exec (sh, nsenter, env), which exec includes too.
	versionExec time.Duration
	// trueExec is a `true` run the same way right after: the harness's
	// own exec alone (sh joining the machine's cgroups, nsenter, env),
	// which exec includes and which is not machineadm's.
	trueExec time.Duration
	// kubeadmVersionExec is a `kubeadm version` of the plain kubeadm
	// binary run the same way: the harness's exec and plain kubeadm's own
	// process start and exit, which a plain kubeadm run pays as well,
	// outside any of its phases.
	kubeadmVersionExec time.Duration
	// unsigned is, for a machineadm join, the part of its wait-cluster-info
	// phase before the request that found cluster-info signed for the
	// token (from the phase's message): the cluster's time, not
	// machineadm's.
	unsigned time.Duration
	// nodeWait is how long the final report's Node annotation writer
	// waited for the kubelet to register its Node (the writer's debug line
	// in the run's log file; 0 when the Node was there): after the report
	// span, part of outside, and the kubelet's time, not machineadm's work.
	nodeWait time.Duration
	// writers are the final report's writers' durations by name (their
	// debug lines in the log file); they run concurrently.
	writers map[string]time.Duration
	// started is when the command started; readyAt when the Node was seen
	// Ready.
	started, readyAt time.Time
	// fromInit is, for a first join, from the init's start to this
	// worker's Node Ready: the cluster's time to its first working
	// worker with this tool.
	fromInit time.Duration
	// afterInitReady is, for a first join, from cp1's Node Ready to this
	// worker's command start: how long after the cluster was up the tool
	// let the worker begin (the init command's exit).
	afterInitReady time.Duration
}

// TestBench is `make bench-e2e` (hack/bench): plain kubeadm, built from the
// same k8s.io/kubernetes module (hack/bench/kubeadm.sh), against
// `machineadm bootstrap`, in the same kind of machine, with the same
// images, the same spec and the kubeadm configuration machineadm derives
// from it (machineadm's `bootstrap phase kubeadm-config`, not timed). Both
// start from a host prepared by `machineadm prepare` (not timed: plain
// kubeadm needs a prepared host too), so the figures are machineadm's cost
// on top of kubeadm. MACHINEADM_BENCH_N samples of each (default 5), for
// control-plane init and for worker join, the tools alternating in order.
// Each init is followed at once by the first worker's join by the same
// tool (the case of issue 14 item 7), on a w1 booted with the cp1.
// It prints the medians and their ratios and says which targets were met;
// it fails only when a bootstrap fails.
func TestBench(t *testing.T) {
	if os.Getenv("MACHINEADM_E2E_BENCH") != "1" {
		t.Skip("the benchmark runs with `make bench-e2e` (MACHINEADM_E2E_BENCH=1)")
	}
	e := theEnv
	n := benchDefaultRuns
	if v := os.Getenv("MACHINEADM_BENCH_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 50 {
			fatalf(t, "MACHINEADM_BENCH_N=%q: want a count from 1 to 50", v)
		}
	}
	if _, err := os.Stat(e.binPath("kubeadm")); err != nil {
		fatalf(t, "%v: hack/bench/kubeadm.sh builds it (make bench-e2e runs it)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	secrets, err := e.makeSecrets(ctx, filepath.Join(e.runDir, "bench-pki"))
	if err != nil {
		fatalln(t, err)
	}
	b := &bench{t: t, e: e, secrets: secrets}

	inits, firsts := map[string][]benchSample{}, map[string][]benchSample{}
	var cluster *Machine
	for i := range n {
		for k, tool := range benchOrder(i) {
			s, first, m := b.initSample(ctx, tool, i)
			inits[tool] = append(inits[tool], s)
			firsts[tool] = append(firsts[tool], first)
			if i == n-1 && k == 1 {
				cluster = m // the last cluster made serves the joins
			} else if err := e.stopMachine(m); err != nil {
				fatalln(t, err)
			}
		}
	}
	cs, err := adminClient(cluster)
	if err != nil {
		fatalln(t, err)
	}
	// The steady-state joins: both tools join a cluster whose cluster-info
	// is signed already (the first joins above waited for the signer).
	if err := waitClusterInfoSigned(ctx, cs, secrets.token, time.Minute); err != nil {
		fatalln(t, err)
	}
	joins := map[string][]benchSample{}
	for i := range n {
		for _, tool := range benchOrder(i) {
			joins[tool] = append(joins[tool], b.joinSample(ctx, cs, tool, i))
		}
	}
	report := benchReport(n, inits, firsts, joins)
	t.Log("\n" + report)
	fmt.Print("\n" + report)
	if out := os.Getenv("MACHINEADM_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			errorln(t, err)
		}
	}
}

// benchOrder alternates which tool goes first, so that a drift (caches
// warming, the other helpers' load) does not favour one.
func benchOrder(i int) []string {
	if i%2 == 0 {
		return []string{toolKubeadm, toolMachineadm}
	}
	return []string{toolMachineadm, toolKubeadm}
}

type bench struct {
	t       *testing.T
	e       *env
	secrets clusterSecrets
}

// initSample boots a fresh cp1 and w1 and prepares both, times one
// control-plane init by tool on cp1 and then, right after it, w1's join by
// the same tool: the first worker, which joins before the
// controller-manager has signed cluster-info for the new token (scenario
// 1's case). w1 is stopped and its Node deleted; cp1 is returned running.
func (b *bench) initSample(ctx context.Context, tool string, i int) (benchSample, benchSample, *Machine) {
	t := b.t
	spec := controlPlaneSpec(cp1, machineadm.ActionInit, "")
	wspec := workerSpec(w1, b.secrets.caHash)
	ms := b.boot(ctx, fmt.Sprintf("bench-init-%s-%d", tool, i), cp1, w1)
	m, w := ms[0], ms[1]
	b.prepare(ctx, m, spec, tool)
	b.prepare(ctx, w, wspec, tool)
	cmd := []string{"machineadm", "bootstrap", "-f", machineSpecFile}
	if tool == toolKubeadm {
		cmd = []string{machineKubeadm, "init", "--config", machineWorkDir + "/kubeadm-init.yaml",
			"--upload-certs", "--skip-certificate-key-print", "--skip-token-print", "--skip-phases", "show-join-command"}
	}
	// The Node is polled through the admin.conf the init writes.
	client := func() (kubernetes.Interface, error) {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(m.Root, "etc/kubernetes/admin.conf"))
		if err != nil {
			return nil, err
		}
		cfg.Timeout, cfg.QPS, cfg.Burst = 2*time.Second, 50, 100
		return kubernetes.NewForConfig(cfg)
	}
	s := b.run(ctx, m, spec, tool, cmd, client)
	t.Logf("BENCH sample init %s #%d: wall %s exec %s rss %d KiB outside %s", tool, i, s.wall, s.exec, s.rssKiB, s.outside)
	first := b.join(ctx, w, wspec, tool, client)
	first.fromInit, first.afterInitReady = first.readyAt.Sub(s.started), first.started.Sub(s.readyAt)
	t.Logf("BENCH sample first-join %s #%d: wall %s exec %s rss %d KiB outside %s own %v", tool, i, first.wall, first.exec, first.rssKiB, first.outside, first.own)
	cs, err := client()
	if err != nil {
		fatalln(t, err)
	}
	if err := b.e.stopMachine(w); err != nil {
		fatalln(t, err)
	}
	if err := deleteNode(ctx, cs, w1.Name, time.Minute); err != nil {
		fatalln(t, err)
	}
	return s, first, m
}

// join times w's join by tool; the Node is polled through client.
func (b *bench) join(ctx context.Context, w *Machine, spec *machineadm.MachineBootstrapConfig, tool string, client func() (kubernetes.Interface, error)) benchSample {
	cmd := []string{"machineadm", "bootstrap", "-f", machineSpecFile}
	if tool == toolKubeadm {
		cmd = []string{machineKubeadm, "join", "--config", machineWorkDir + "/kubeadm-join.yaml"}
	}
	return b.run(ctx, w, spec, tool, cmd, client)
}

// joinSample boots a fresh w1, prepares it and times one worker join by
// tool into the cluster behind cs, whose cluster-info is signed already;
// then the machine is stopped and its Node deleted, so that the next
// sample joins under the same name.
func (b *bench) joinSample(ctx context.Context, cs kubernetes.Interface, tool string, i int) benchSample {
	t := b.t
	spec := workerSpec(w1, b.secrets.caHash)
	m := b.boot(ctx, fmt.Sprintf("bench-join-%s-%d", tool, i), w1)[0]
	b.prepare(ctx, m, spec, tool)
	s := b.join(ctx, m, spec, tool, func() (kubernetes.Interface, error) { return cs, nil })
	t.Logf("BENCH sample join %s #%d: wall %s exec %s rss %d KiB outside %s", tool, i, s.wall, s.exec, s.rssKiB, s.outside)
	if err := b.e.stopMachine(m); err != nil {
		fatalln(t, err)
	}
	if err := deleteNode(ctx, cs, w1.Name, time.Minute); err != nil {
		fatalln(t, err)
	}
	return s
}

// boot boots machines in their own subdirectory of the run; they get the
// kubeadm binary besides machineadm.
func (b *bench) boot(ctx context.Context, subdir string, hs ...hostsEntry) []*Machine {
	kubeadmBin := b.e.binPath("kubeadm")
	return b.e.bootMachinesWith(ctx, b.t, bootOptions{subdir: subdir, prepare: func(m *Machine) error {
		return copyFile(kubeadmBin, filepath.Join(m.Root, machineKubeadm), 0o755)
	}}, hs...)
}

// prepare delivers the spec and its secrets, runs `machineadm prepare`
// and, for plain kubeadm, `machineadm bootstrap phase kubeadm-config`,
// which imports the CA set, writes the kubelet patch and the kubeadm
// configuration (0600) that plain kubeadm then takes as --config.
func (b *bench) prepare(ctx context.Context, m *Machine, spec *machineadm.MachineBootstrapConfig, tool string) {
	t := b.t
	if err := deliver(m, spec, b.secrets); err != nil {
		fatalln(t, err)
	}
	steps := [][]string{{"machineadm", "prepare", "-f", machineSpecFile}}
	if tool == toolKubeadm {
		steps = append(steps, []string{"machineadm", "bootstrap", "phase", "kubeadm-config", "-f", machineSpecFile})
	}
	for _, args := range steps {
		if res, err := m.Exec(ctx, nil, args...); err != nil {
			fatalf(t, "%s: %v\n%s", m.Name, err, b.redact(tail(res.Stdout+res.Stderr, 30)))
		}
	}
	time.Sleep(benchSettle)
}

// run times cmd in m: from its start to m's Node being Ready, polled
// through client every benchReadyPoll, and its peak RSS; for machineadm,
// the time outside kubeadm's phases from its report.
func (b *bench) run(ctx context.Context, m *Machine, spec *machineadm.MachineBootstrapConfig, tool string, cmd []string, client func() (kubernetes.Interface, error)) benchSample {
	t := b.t
	pctx, stop := context.WithTimeout(ctx, bootstrapTimeout+readyTimeout)
	defer stop()
	ready := make(chan time.Time, 1)
	go pollNodeReady(pctx, client, m.Name, ready)
	bctx, cancel := context.WithTimeout(ctx, bootstrapTimeout)
	defer cancel()
	start := time.Now()
	res, err := m.ExecPeakRSS(bctx, nil, cmd...)
	s := benchSample{exec: time.Since(start), rssKiB: res.MaxRSSKiB, started: start}
	_ = os.WriteFile(filepath.Join(m.Dir, "bench.log"), []byte(b.redact(res.Stdout+res.Stderr)), 0o600)
	if err != nil {
		dumpDiagnostics(ctx, t, m)
		fatalf(t, "%s %s: %v\n%s", m.Name, tool, err, b.redact(tail(res.Stdout+res.Stderr, 40)))
	}
	select {
	case at := <-ready:
		s.wall, s.readyAt = at.Sub(start), at
	case <-pctx.Done():
		dumpDiagnostics(ctx, t, m)
		fatalf(t, "%s %s: node not Ready within %s", m.Name, tool, bootstrapTimeout+readyTimeout)
	}
	if tool == toolMachineadm {
		r, raw, err := readReport(m)
		if err != nil {
			fatalln(t, err)
		}
		want := tablePhases(spec.Spec.Role, spec.Spec.Action)
		if err := r.checkSucceeded(want); err != nil {
			fatalf(t, "%s: %v\n%s", m.Name, err, raw)
		}
		s.outside, s.own = outsideKubeadm(spec, r, s.exec)
		s.span = r.EndTime.Sub(r.StartTime)
		// The machines share the host's clock: the report's startTime
		// against the command's start here.
		s.beforeSpan = r.StartTime.Sub(start)
		if s.unsigned, err = unsignedWait(r); err != nil {
			fatalf(t, "%s: %v", m.Name, err)
		}
		if s.nodeWait, s.writers, err = finalWriters(m); err != nil {
			fatalf(t, "%s: %v", m.Name, err)
		}
		for _, x := range []struct {
			d    *time.Duration
			args []string
		}{
			{&s.versionExec, []string{"machineadm", "version"}},
			{&s.trueExec, []string{"true"}},
			{&s.kubeadmVersionExec, []string{machineKubeadm, "version"}},
		} {
			xstart := time.Now()
			if res, err := m.Exec(ctx, nil, x.args...); err != nil {
				fatalf(t, "%s: %s: %v\n%s", m.Name, strings.Join(x.args, " "), err, res.Stderr)
			}
			*x.d = time.Since(xstart)
		}
		var ph []string
		for _, p := range r.Phases {
			ph = append(ph, fmt.Sprintf("%s=%dms", p.Name, p.DurationMs))
		}
		t.Logf("%s %s phases: %s", m.Name, tool, strings.Join(ph, " "))
	}
	return s
}

// The final writers' debug lines in the run's log file (pkg/report's
// runWriters, pkg/report/nodeannotation's Writer).
var (
	writerDoneRE = regexp.MustCompile(`msg="outcome report: writer done" writer=(\S+) took=(\S+)`)
	nodeWaitRE   = regexp.MustCompile(`msg="node-annotation: waited for the Node to register" .*waited=(\S+)`)
)

// finalWriters reads, from the log file beside m's report, the last run's
// final writers' durations and the Node annotation writer's wait for the
// Node (0 without one). A fresh machine's log holds its prepare and its
// bootstrap; prepare has no Node annotation writer, and for the others
// the bootstrap's lines come last.
func finalWriters(m *Machine) (time.Duration, map[string]time.Duration, error) {
	path := filepath.Join(filepath.Dir(reportPath), session.LogFileName)
	raw, err := m.ReadFile(path)
	if err != nil {
		return 0, nil, fmt.Errorf("log file: %w", err)
	}
	writers := map[string]time.Duration{}
	var wait time.Duration
	for _, l := range strings.Split(string(raw), "\n") {
		if w := writerDoneRE.FindStringSubmatch(l); w != nil {
			d, err := time.ParseDuration(w[2])
			if err != nil {
				return 0, nil, fmt.Errorf("%s: %q: %w", path, l, err)
			}
			writers[w[1]] = d
		} else if w := nodeWaitRE.FindStringSubmatch(l); w != nil {
			d, err := time.ParseDuration(w[1])
			if err != nil {
				return 0, nil, fmt.Errorf("%s: %q: %w", path, l, err)
			}
			wait += d // one line per attempt that waited
		}
	}
	if _, ok := writers["node-annotation"]; !ok {
		return 0, nil, fmt.Errorf("%s has no line of the node-annotation writer's end", path)
	}
	return wait, writers, nil
}

// outsideKubeadm is exec minus the durations of kubeadm's leaf phases in
// report r, and the durations of the other phases (machineadm's own)
// by name.
func outsideKubeadm(spec *machineadm.MachineBootstrapConfig, r *outcomeReport, exec time.Duration) (time.Duration, map[string]time.Duration) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: spec.Spec.Role, Action: spec.Spec.Action}}
	if spec.Spec.ControlPlane != nil {
		cfg.Spec.ControlPlane = &machineadm.ControlPlane{Etcd: machineadm.Etcd{Local: &machineadm.LocalEtcd{}}, CertificateKey: &machineadm.SecretSource{File: "/k"}}
	}
	rows := run.PhasesFor(cfg)
	var names, parents []string
	for _, p := range rows {
		names = append(names, p.Name)
		if !p.Leaf(rows) {
			parents = append(parents, p.Name)
		}
	}
	own := map[string]time.Duration{}
	inside := time.Duration(0)
	for _, p := range r.Phases {
		d := time.Duration(p.DurationMs) * time.Millisecond
		switch {
		case slices.Contains(parents, p.Name):
			// spans its children
		case slices.Contains(names, p.Name):
			inside += d
		default:
			own[p.Name] = d
		}
	}
	return exec - inside, own
}

// unsignedRE finds, in the wait-cluster-info phase's message, the time
// before the signature was there (phases.UnsignedMessage).
var unsignedRE = regexp.MustCompile(`\((\S+) ` + regexp.QuoteMeta(phases.UnsignedMessage) + `\)`)

// unsignedWait is the time a join's wait-cluster-info phase spent before
// cluster-info was signed for its token; 0 for a report without the phase
// (an init). A phase whose message lacks it is an error: the phase's
// message and this benchmark disagree.
func unsignedWait(r *outcomeReport) (time.Duration, error) {
	for _, p := range r.Phases {
		if p.Name != phases.WaitClusterInfoName {
			continue
		}
		m := unsignedRE.FindStringSubmatch(p.Message)
		if m == nil {
			return 0, fmt.Errorf("%s's message %q does not say how long before the signature was there", p.Name, p.Message)
		}
		return time.ParseDuration(m[1])
	}
	return 0, nil
}

// pollNodeReady sends the first time it sees the Node name Ready.
func pollNodeReady(ctx context.Context, client func() (kubernetes.Interface, error), name string, ready chan<- time.Time) {
	tick := time.NewTicker(benchReadyPoll)
	defer tick.Stop()
	var cs kubernetes.Interface
	for {
		if cs == nil {
			cs, _ = client()
		}
		if cs != nil {
			if n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil && !nodeReadyTime(n).IsZero() {
				ready <- time.Now()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// waitClusterInfoSigned waits until kube-public/cluster-info carries the
// bootstrap signer's signature for token's ID.
func waitClusterInfoSigned(ctx context.Context, cs kubernetes.Interface, token string, timeout time.Duration) error {
	id, _, _ := strings.Cut(token, ".")
	deadline := time.Now().Add(timeout)
	for {
		cm, err := cs.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, "cluster-info", metav1.GetOptions{})
		if err == nil && cm.Data["jws-kubeconfig-"+id] != "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster-info not signed for the bootstrap token within %s (last error: %v)", timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// deleteNode deletes the Node name and waits until it is gone.
func deleteNode(ctx context.Context, cs kubernetes.Interface, name string, timeout time.Duration) error {
	if err := cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for deadline := time.Now().Add(timeout); ; time.Sleep(500 * time.Millisecond) {
		_, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s still there %s after its deletion (%v)", name, timeout, err)
		}
	}
}

// redact removes the bootstrap token and the certificate key (each half
// of the token too) from command output before it is kept or shown.
func (b *bench) redact(s string) string {
	// The token's ID stays: it is public (cluster-info's jws-kubeconfig-<id>).
	_, secret, _ := strings.Cut(b.secrets.token, ".")
	for _, v := range []string{b.secrets.token, secret, b.secrets.certKey} {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[REDACTED]")
		}
	}
	return s
}
