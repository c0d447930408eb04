//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// benchUpgradeSample is one measured node upgrade.
type benchUpgradeSample struct {
	// wall is from the command's start to the Node reporting the new
	// kubelet version and Ready: polled every benchReadyPoll from the
	// command's start, beside it, for both tools (firstSeen), so that it
	// is the Node's time, not the command's (machineadm upgrade on a
	// control plane goes on to wait for the static pods, plain kubeadm's
	// command ends at its kubelet's restart).
	wall time.Duration
	// current is, on a control plane, from the command's start until
	// the kubelet runs the control plane's current static pod manifests
	// and they are Ready (staticPodsCurrent, polled every
	// benchCurrentPoll once the command has returned and the Node is at
	// the new version): a new kubelet gives the unchanged manifests new
	// hashes and restarts every static pod, which machineadm upgrade
	// waits for and the plain kubeadm arm does not; the same end state
	// for both tools, reported against the time's target beside wall; 0
	// on a worker.
	current time.Duration
	// exec is the command's own run time; rssKiB the peak resident set
	// (KiB) of its process tree's largest process (ExecPeakRSS): under
	// plain kubeadm that is kubeadm's, beside the shell, install and
	// systemctl; under machineadm, machineadm's.
	exec   time.Duration
	rssKiB int64
	// anonKiB and fileKiB are the largest anonymous and file-backed
	// resident sets one process of the tree had, sampled every 20 ms
	// (ExecPeakMem): what the program allocated, against the pages of
	// its binary it touched. Reported beside rssKiB; the target is
	// rssKiB's.
	anonKiB, fileKiB int64
	// apiDown is how long cp1's API server did not answer /readyz from
	// the command's start until it has answered for apiStableFor in a row
	// after the Node is at the new version and, on a control plane, its
	// static pods are current (probed every apiProbeEvery):
	// a control plane still restarting when the command is done counts
	// for the node that made it restart, not for the next one; longest
	// is the longest stretch of it.
	apiDown, longest time.Duration
}

// apiProbeEvery is the API server probe's period during an upgrade.
const apiProbeEvery = 100 * time.Millisecond

// benchCurrentPoll is the period of the check that a control plane's
// static pods are current after an upgrade.
const benchCurrentPoll = 250 * time.Millisecond

// apiStableFor is how long the API server must answer without a failure
// after an upgrade before its unavailability is summed; apiSettleTimeout
// bounds that wait and, on a control plane, the wait for the static pods
// before it, each (endStateWait).
const (
	apiStableFor     = 10 * time.Second
	apiSettleTimeout = 3 * time.Minute
)

// TestBenchUpgrade is `make bench-upgrade-e2e` (hack/bench): per node, the
// upgrade from prevKubernetesVersion to kubernetesVersion by `machineadm
// upgrade --skip-drain` against plain kubeadm (hack/bench/kubeadm.sh, the
// same k8s.io/kubernetes as the embedded one) doing what its upgrade guide
// says: `kubeadm upgrade apply VERSION --yes` on the first control plane,
// `kubeadm upgrade node` on a worker, each followed by the new kubelet
// binary installed from the same file machineadm's spec names and a
// kubelet restart. Neither drains (a drain is the cluster's time, and
// plain kubeadm leaves it to kubectl). Each sample is a cluster of its own
// (cp1 Init, w1 and w2 Join) bootstrapped by machineadm at the previous
// minor; the tools alternate. w2 is a reference beside the target: its
// kubeadm arm replaces the kubelet with the guarantees machineadm gives
// (benchCheckedKubelet: the copy's sha256 checked, synced, renamed into
// place), its machineadm arm is a second worker sample. It prints the medians, the ratios
// machineadm/kubeadm against the targets (time <= 1.05: on the control
// plane both to the Node at the new version and to the same end state,
// its static pods current; peak RSS <= 1.10) and how long cp1's API
// server was unavailable under each (target: no longer than under plain
// kubeadm); it fails only when an upgrade fails.
func TestBenchUpgrade(t *testing.T) {
	if os.Getenv("MACHINEADM_E2E_BENCH") != "1" {
		t.Skip("the benchmark runs with `make bench-upgrade-e2e` (MACHINEADM_E2E_BENCH=1)")
	}
	e := theEnv
	n := 1
	if v := os.Getenv("MACHINEADM_BENCH_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 20 {
			fatalf(t, "MACHINEADM_BENCH_N=%q: want a count from 1 to 20", v)
		}
	}
	if _, err := os.Stat(e.binPath("kubeadm")); err != nil {
		fatalf(t, "%v: hack/bench/kubeadm.sh builds it (make bench-upgrade-e2e runs it)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	defer cancel()
	secrets, err := e.makeSecrets(ctx, filepath.Join(e.runDir, "bench-upgrade-pki"))
	if err != nil {
		fatalln(t, err)
	}
	samples := map[string]map[string][]benchUpgradeSample{} // node -> tool -> samples
	for i := range n {
		for _, tool := range benchOrder(i) {
			for node, s := range benchUpgradeSampleRun(ctx, t, e, secrets, tool, i) {
				if samples[node] == nil {
					samples[node] = map[string][]benchUpgradeSample{}
				}
				samples[node][tool] = append(samples[node][tool], s)
			}
		}
	}
	report := benchUpgradeReport(n, samples)
	t.Log("\n" + report)
	fmt.Print("\n" + report)
	if out := os.Getenv("MACHINEADM_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			errorln(t, err)
		}
	}
}

// benchNodeKinds are the benchmark's node kinds, in the report's order:
// cp1, w1 and w2's upgrades.
var benchNodeKinds = []string{"control-plane", "worker", benchCheckedKind}

// benchCheckedKind is w2's kind: a worker whose kubeadm arm replaces the
// kubelet as machineadm does (benchCheckedKubelet), a reference beside
// the target, whose kubeadm arm installs it unchecked and unsynced.
const benchCheckedKind = "worker-checked"

// benchCheckedKubelet is the kubeadm arm's kubelet replacement on w2, in
// sh: the new kubelet copied beside /usr/bin/kubelet, the copy's sha256
// checked against sum (as machineadm checks the spec's), synced (`sync
// FILE` is fsync(2) in coreutils), renamed over the old one and the
// directory synced (as machineadm's install), where w1's `install`
// neither checks nor waits for the disk. The digest is OpenSSL's
// (`openssl dgst`, in the machines' rootfs with ca-certificates), which
// uses the CPU's SHA extensions as Go's crypto/sha256 in machineadm
// does: coreutils 9.1's sha256sum (Debian 12's, no libcrypto) is portable
// C, 0.37-0.49 s of CPU for the 88 MiB kubelet on the benchmark's machine
// against 0.06 s for openssl and about 0.1 s for Go, and would make the
// reference's guarantee cost 0.3 s more than machineadm's.
func benchCheckedKubelet(src, sum string) string {
	// Commands of their own, not an && list, which sh -e would not stop
	// at: a failed check (test's status) ends the command.
	return "install -m 0755 " + src + " /usr/bin/.kubelet.new; test \"$(openssl dgst -sha256 -r /usr/bin/.kubelet.new)\" = '" + sum + " */usr/bin/.kubelet.new'; sync /usr/bin/.kubelet.new; mv -f /usr/bin/.kubelet.new /usr/bin/kubelet; sync /usr/bin"
}

// specKubeletSHA256 is the sha256 s's spec.host.files gives
// /usr/bin/kubelet (upgradeNodeSpec): the digest machineadm's arm checks.
func specKubeletSHA256(t *testing.T, s *v1alpha1.MachineBootstrapConfig) string {
	for _, f := range s.Spec.Host.Files {
		if f.Path == "/usr/bin/kubelet" && f.Source != nil && f.Source.SHA256 != "" {
			return f.Source.SHA256
		}
	}
	fatalln(t, "the upgrade's spec has no /usr/bin/kubelet with a sha256 in spec.host.files")
	return ""
}

// benchUpgradeSampleRun boots cp1, w1 and w2, bootstraps them at the
// previous minor with machineadm, and times the upgrade of cp1, then of
// w1, then of w2, by tool: the samples by node kind (benchNodeKinds). The
// machines are stopped afterwards.
func benchUpgradeSampleRun(ctx context.Context, t *testing.T, e *env, secrets clusterSecrets, tool string, i int) map[string]benchUpgradeSample {
	kubeadmBin := e.binPath("kubeadm")
	ms := e.bootMachinesWith(ctx, t, bootOptions{subdir: fmt.Sprintf("bench-upgrade-%s-%d", tool, i), prepare: func(m *Machine) error {
		if err := e.prepareUpgradeMachine(m); err != nil {
			return err
		}
		return copyFile(kubeadmBin, filepath.Join(m.Root, machineKubeadm), 0o755)
	}}, cp1, w1, w2)
	defer func() {
		for _, m := range ms {
			if err := e.stopMachine(m); err != nil {
				errorln(t, err)
			}
		}
	}()
	var cfg *rest.Config
	var cs *kubernetes.Clientset
	for k, d := range []struct {
		node   hostsEntry
		phases []string
	}{{cp1, initPhases}, {w1, workerJoinPhases}, {w2, workerJoinPhases}} {
		s, err := upgradeNodeSpec(e, secrets.caHash, d.node, prevKubernetesVersion, false)
		if err != nil {
			fatalln(t, err)
		}
		if err := deliver(ms[k], s, secrets); err != nil {
			fatalln(t, err)
		}
		mustBootstrap(ctx, t, ms[k], d.phases, true)
		if k == 0 {
			cfg, err = clientcmd.BuildConfigFromFlags("", filepath.Join(ms[0].Root, "etc/kubernetes/admin.conf"))
			if err != nil {
				fatalln(t, err)
			}
			cfg.Timeout, cfg.QPS, cfg.Burst = 2*time.Second, 50, 100
			if cs, err = kubernetes.NewForConfig(cfg); err != nil {
				fatalln(t, err)
			}
			if err := keepConntrackMax(ctx, cs); err != nil {
				fatalln(t, err)
			}
		}
	}
	if _, err := waitNodesReady(ctx, cs, readyTimeout, cp1.Name, w1.Name, w2.Name); err != nil {
		fatalln(t, err)
	}
	out := map[string]benchUpgradeSample{}
	for k, node := range []hostsEntry{cp1, w1, w2} {
		m := ms[k]
		s, err := upgradeNodeSpec(e, secrets.caHash, node, kubernetesVersion, false)
		if err != nil {
			fatalln(t, err)
		}
		if err := deliver(m, s, secrets); err != nil {
			fatalln(t, err)
		}
		cmd := []string{"machineadm", "upgrade", "-f", machineSpecFile, "--skip-drain"}
		if os.Getenv("MACHINEADM_BENCH_HEAP_PROFILE") == "1" {
			// Where machineadm's heap goes (a diagnostic: the profile
			// raises the figures it explains, so a sample taken this way
			// is not one to compare): heap.prof and its peaks in the
			// machine's work directory, kept with the machine's files.
			cmd = append([]string{"env", "MACHINEADM_DEBUG_HEAP_PROFILE=" + machineWorkDir + "/heap.prof", "MACHINEADM_DEBUG_HEAP_PEAKS=1"}, cmd...)
		}
		if tool == toolKubeadm {
			// The kubelet patch machineadm's bootstrap wrote (its work
			// directory's patches), as machineadm's upgrade passes it.
			flags := " --ignore-preflight-errors=" + strings.Join(s.Spec.Node.IgnorePreflightErrors, ",") + " --patches " + machineWorkDir + "/patches"
			up := "node" + flags
			if node == cp1 {
				up = "apply " + kubernetesVersion + " --yes" + flags
			}
			replace := "install -m 0755 " + e2eBinDir + "/kubelet /usr/bin/kubelet"
			if node == w2 {
				replace = benchCheckedKubelet(e2eBinDir+"/kubelet", specKubeletSHA256(t, s))
			}
			cmd = []string{"/bin/sh", "-ec", machineKubeadm + " upgrade " + up +
				"; " + replace + "; systemctl daemon-reload; systemctl restart kubelet"}
		}
		sample := benchUpgradeRun(ctx, t, m, cs, cfg, tool, node == cp1, cmd)
		if tool == toolMachineadm && os.Getenv("MACHINEADM_BENCH_HEAP_PROFILE") == "1" {
			for _, f := range []string{"heap.prof", "heap.prof.peak"} {
				if b, err := m.ReadFile(machineWorkDir + "/" + f); err == nil {
					_ = os.WriteFile(filepath.Join(m.Dir, f), b, 0o600)
				}
			}
		}
		t.Logf("BENCH sample upgrade %s %s #%d: wall %s current %s exec %s rss %d KiB (anonymous %d, file %d) API unavailable %s (longest %s)",
			node.Name, tool, i, sample.wall, sample.current, sample.exec, sample.rssKiB, sample.anonKiB, sample.fileKiB, sample.apiDown, sample.longest)
		out[benchNodeKinds[k]] = sample
	}
	return out
}

// benchUpgradeRun times cmd in m: until m's Node reports the new kubelet
// version and is Ready (polled from the command's start, beside it), on a
// control plane until its static pods are current too, its peak RSS, and
// cp1's API server unavailability meanwhile.
func benchUpgradeRun(ctx context.Context, t *testing.T, m *Machine, cs kubernetes.Interface, cfg *rest.Config, tool string, controlPlane bool, cmd []string) benchUpgradeSample {
	probe := startAPIProbe(ctx, cfg)
	uctx, cancel := context.WithTimeout(ctx, upgradeTimeout)
	defer cancel()
	start := time.Now()
	// The Node is polled from the command's start, beside it, for both
	// tools and for as long as the command runs (upgradeTimeout bounds
	// it): machineadm's command goes on after the Node's new version on
	// a control plane (it waits for the static pods), plain kubeadm's
	// ends before it.
	nctx, ncancel := context.WithCancel(ctx)
	newVersion := startFirstSeen(func() bool {
		n, err := cs.CoreV1().Nodes().Get(nctx, m.Name, metav1.GetOptions{})
		return err == nil && n.Status.NodeInfo.KubeletVersion == kubernetesVersion && !nodeReadyTime(n).IsZero()
	}, benchReadyPoll, time.Now, time.Sleep)
	defer newVersion.stop()
	defer ncancel() // first: it ends a GET under way
	res, peak, err := m.ExecPeakMem(uctx, nil, cmd...)
	s := benchUpgradeSample{exec: time.Since(start), rssKiB: peak.MaxRSSKiB, anonKiB: peak.AnonKiB, fileKiB: peak.FileKiB}
	_ = os.WriteFile(filepath.Join(m.Dir, "bench-upgrade.log"), []byte(res.Stdout+res.Stderr), 0o600)
	if err != nil {
		probe.stop()
		dumpDiagnostics(ctx, t, m)
		fatalf(t, "%s %s: %v\n%s", m.Name, tool, err, tail(res.Stdout+res.Stderr, 40))
	}
	// Not seen yet: the poll goes on for readyTimeout after the command.
	seen := newVersion.wait(time.Now().Add(readyTimeout))
	if seen.IsZero() {
		probe.stop()
		fatalf(t, "%s %s: the Node did not report %s and Ready within %s", m.Name, tool, kubernetesVersion, readyTimeout)
	}
	s.wall = seen.Sub(start)
	// The figures of both tools are taken over the same end state (under
	// plain kubeadm the new kubelet replaces every static pod after the
	// Node reports Ready, and the API server had been stable long enough
	// to stop the probe before it went down again). A sample that does not
	// reach it is not comparable: the run fails, the figures still print.
	at, err := endStateWait{
		current:     func() error { return staticPodsCurrent(ctx, cs, m.Name) },
		stable:      func() bool { return probe.stableFor(apiStableFor) },
		currentPoll: benchCurrentPoll, stablePoll: apiProbeEvery, budget: apiSettleTimeout,
		now: time.Now, sleep: time.Sleep,
	}.run(time.Now(), controlPlane)
	if !at.IsZero() {
		s.current = at.Sub(start)
	}
	if err != nil {
		errorf(t, "BENCH %s %s: %v", m.Name, tool, err)
	}
	s.apiDown, s.longest = probe.stop()
	// Where the time and the unavailability went: the API server's
	// unavailable stretches from the command's start, and machineadm's
	// phases from its report (sequential, so each starts where the one
	// before ended).
	var down []string
	for _, st := range probe.stretches {
		down = append(down, fmt.Sprintf("%.1fs+%.1fs", st[0].Sub(start).Seconds(), st[1].Sub(st[0]).Seconds()))
	}
	t.Logf("BENCH %s %s: API server unavailable at (from the start) %s", m.Name, tool, strings.Join(down, ", "))
	if controlPlane {
		t.Logf("BENCH %s %s: containers (from the start) %s", m.Name, tool, benchTimeline(ctx, m, start, probe.stretches))
	}
	if tool == toolMachineadm {
		if r, _, err := readReport(m); err == nil {
			var ph []string
			at := r.StartTime.Sub(start).Seconds()
			parent := map[string]bool{}
			for _, p := range r.Phases {
				if i := strings.LastIndexByte(p.Name, '/'); i > 0 {
					parent[p.Name[:i]] = true
				}
			}
			for _, p := range r.Phases {
				if parent[p.Name] {
					continue // a parent spans its children
				}
				// A worker's upgrade takes about a second: its phases are
				// shown from 20 ms, a control plane's from 200 ms.
				if p.DurationMs >= 200 || (!controlPlane && p.DurationMs >= 20) {
					ph = append(ph, fmt.Sprintf("%s@%.1fs %.1fs", p.Name, at, float64(p.DurationMs)/1000))
				}
				at += float64(p.DurationMs) / 1000
			}
			t.Logf("BENCH %s machineadm phases (>= %s): %s", m.Name, map[bool]string{true: "0.2 s", false: "20 ms"}[controlPlane], strings.Join(ph, ", "))
		}
	}
	return s
}

// apiProbe GETs /readyz every apiProbeEvery and adds up the time it got
// no 200 (a probe's failure counts from it to the next probe).
type apiProbe struct {
	done          chan struct{}
	wg            sync.WaitGroup
	down, longest time.Duration
	// stretches are the unavailable stretches, [first failed probe,
	// next good probe); mu guards them and since.
	stretches [][2]time.Time
	mu        sync.Mutex
	// since is the start of the probe or the end of the last stretch.
	since time.Time
}

// stableFor says whether the API server answered every probe for d.
func (p *apiProbe) stableFor(d time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Since(p.since) >= d
}

func startAPIProbe(ctx context.Context, cfg *rest.Config) *apiProbe {
	p := &apiProbe{done: make(chan struct{}), since: time.Now()}
	c := rest.CopyConfig(cfg)
	c.Timeout = time.Second
	cs, err := kubernetes.NewForConfig(c)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		var stretch time.Duration
		for {
			t0 := time.Now()
			ok := err == nil && cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil
			select {
			case <-p.done:
				return
			case <-time.After(time.Until(t0.Add(apiProbeEvery))):
			}
			if ok {
				stretch = 0
				continue
			}
			d := time.Since(t0)
			p.down += d
			p.mu.Lock()
			if stretch == 0 {
				p.stretches = append(p.stretches, [2]time.Time{t0, t0})
			}
			p.since = time.Now()
			p.stretches[len(p.stretches)-1][1] = p.since
			p.mu.Unlock()
			stretch += d
			p.longest = max(p.longest, stretch)
		}
	}()
	return p
}

// stop ends the probe: total and longest unavailability.
func (p *apiProbe) stop() (time.Duration, time.Duration) {
	close(p.done)
	p.wg.Wait()
	return p.down, p.longest
}

// benchUpgradeReport prints, per node kind, each tool's medians, the
// ratios machineadm/kubeadm with their targets (on the control plane the
// time's on two rows: to the Node at the new version and to the static
// pods current), and every sample.
func benchUpgradeReport(n int, samples map[string]map[string][]benchUpgradeSample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "BENCH machineadm upgrade vs plain kubeadm upgrade, %s -> %s: %d samples each, same machines and images\n", prevKubernetesVersion, kubernetesVersion, n)
	for _, node := range benchNodeKinds {
		if node == benchCheckedKind {
			fmt.Fprintf(&b, "BENCH upgrade %s: reference, not the target's baseline: w2, whose kubeadm arm checks the new kubelet's sha256 and syncs it into place as machineadm does (worker's kubeadm arm: install, unchecked, unsynced)\n", node)
		}
		ka, ma := samples[node][toolKubeadm], samples[node][toolMachineadm]
		med := func(ss []benchUpgradeSample, f func(benchUpgradeSample) float64) float64 {
			v := make([]float64, len(ss))
			for i, s := range ss {
				v[i] = f(s)
			}
			return median(v)
		}
		fmt.Fprintf(&b, "BENCH upgrade %-14s %-28s %12s %12s   %s\n", node, "", toolKubeadm, toolMachineadm, "ratio")
		type row struct {
			name, unit string
			f          func(benchUpgradeSample) float64
			target     float64
		}
		rows := []row{{"start -> Node at new version", "s", func(s benchUpgradeSample) float64 { return s.wall.Seconds() }, benchTargetWall}}
		if node == "control-plane" {
			// The time's target holds for both ends: the Node's new
			// version, which plain kubeadm's command ends before and
			// machineadm's runs past, and the same end state for both
			// tools (the kubelet runs the current static pods).
			rows = append(rows, row{"start -> static pods current", "s", func(s benchUpgradeSample) float64 { return s.current.Seconds() }, benchTargetWall})
		}
		rows = append(rows, row{"peak RSS", "Mi", func(s benchUpgradeSample) float64 { return float64(s.rssKiB) / 1024 }, benchTargetRSS})
		// A sample that did not reach the end state has no time to it
		// (0, and the run fails): its row gets no verdict.
		short := func(ss []benchUpgradeSample, f func(benchUpgradeSample) float64) bool {
			for _, s := range ss {
				if f(s) == 0 {
					return true
				}
			}
			return false
		}
		// w2's verdicts say they are the reference's, on every row.
		ref := ""
		if node == benchCheckedKind {
			ref = "reference: "
		}
		for _, l := range rows {
			k, m := med(ka, l.f), med(ma, l.f)
			verdict := ref + metWord(m/k <= l.target)
			if short(ka, l.f) || short(ma, l.f) {
				verdict = ref + "not comparable (a sample did not reach it)"
			}
			fmt.Fprintf(&b, "BENCH upgrade %-14s %-28s %10.2f%-2s %10.2f%-2s   %.3f   target <= %.2f: %s\n", node, l.name, k, l.unit, m, l.unit, m/k, l.target, verdict)
		}
		// What the peak is made of (sampled, no target): the memory the
		// tool allocated, and the pages of its binary and other files.
		for _, l := range []struct {
			name string
			f    func(benchUpgradeSample) float64
		}{
			{"  peak anonymous (sampled)", func(s benchUpgradeSample) float64 { return float64(s.anonKiB) / 1024 }},
			{"  peak file-backed (sampled)", func(s benchUpgradeSample) float64 { return float64(s.fileKiB) / 1024 }},
		} {
			k, m := med(ka, l.f), med(ma, l.f)
			fmt.Fprintf(&b, "BENCH upgrade %-14s %-28s %10.2fMi %10.2fMi   %.3f\n", node, l.name, k, m, m/k)
		}
		down := func(s benchUpgradeSample) float64 { return s.apiDown.Seconds() }
		k, m := med(ka, down), med(ma, down)
		fmt.Fprintf(&b, "BENCH upgrade %-14s %-28s %10.2fs  %10.2fs    target <= kubeadm's: %s\n", node, "API server unavailable", k, m, ref+metWord(m <= k))
		longest := func(s benchUpgradeSample) float64 { return s.longest.Seconds() }
		fmt.Fprintf(&b, "BENCH upgrade %-14s %-28s %10.2fs  %10.2fs\n", node, "  longest stretch", med(ka, longest), med(ma, longest))
		for _, tool := range []string{toolKubeadm, toolMachineadm} {
			for i, s := range samples[node][tool] {
				fmt.Fprintf(&b, "BENCH upgrade %-14s sample %s #%d: wall %.2fs current %.2fs exec %.2fs rss %.1fMi (anonymous %.1fMi, file %.1fMi) API unavailable %.2fs (longest %.2fs)\n",
					node, tool, i, s.wall.Seconds(), s.current.Seconds(), s.exec.Seconds(), float64(s.rssKiB)/1024, float64(s.anonKiB)/1024, float64(s.fileKiB)/1024, s.apiDown.Seconds(), s.longest.Seconds())
			}
		}
	}
	return b.String()
}
