//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// benchReport is the benchmark's printout: per kind (init, join) the
// medians of each tool (first-join: the worker joining right after the
// init, against the 3 s target), the ratios machineadm/kubeadm — the median of the
// per-sample ratios (sample i of both tools ran back to back) and the
// ratio of the medians — each against its target, machineadm's time
// outside kubeadm's phases with the medians of its own phases, and every
// sample.
func benchReport(n int, inits, firsts, joins map[string][]benchSample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "BENCH machineadm bootstrap vs plain kubeadm: %d samples each, same machines, images and kubeadm configuration\n", n)
	for _, k := range []struct {
		kind    string
		samples map[string][]benchSample
	}{{"init", inits}, {"first-join", firsts}, {"join", joins}} {
		ka, ma := k.samples[toolKubeadm], k.samples[toolMachineadm]
		wall := func(s benchSample) float64 { return s.wall.Seconds() }
		rss := func(s benchSample) float64 { return float64(s.rssKiB) / 1024 }
		fmt.Fprintf(&b, "BENCH %s  %-26s %12s %12s   %s\n", k.kind, "", toolKubeadm, toolMachineadm, "ratio: median of pairs / of medians")
		line := func(name, unit string, f func(benchSample) float64, target float64, enforce bool) {
			pr, mr := pairRatio(ka, ma, f), median(values(ma, f))/median(values(ka, f))
			verdict := ""
			if enforce {
				verdict = fmt.Sprintf("   target <= %.2f: %s", target, metWord(pr <= target))
			}
			fmt.Fprintf(&b, "BENCH %s  %-26s %10.2f%-2s %10.2f%-2s   %.3f / %.3f%s\n", k.kind, name,
				median(values(ka, f)), unit, median(values(ma, f)), unit, pr, mr, verdict)
		}
		line("start -> Node Ready", "s", wall, benchTargetWall, k.kind == "init")
		if k.kind == "first-join" {
			w := medianDuration(ma, func(s benchSample) time.Duration { return s.wall })
			fmt.Fprintf(&b, "BENCH %s  machineadm start -> Node Ready median %.2fs   target <= 3s: %s\n", k.kind, w.Seconds(), metWord(w <= 3*time.Second))
			line("init start -> worker Ready", "s", func(s benchSample) float64 { return s.fromInit.Seconds() }, 0, false)
			line("worker start - cp1 Ready", "s", func(s benchSample) float64 { return s.afterInitReady.Seconds() }, 0, false)
		}
		line("peak RSS", "Mi", rss, benchTargetRSS, true)
		out := medianDuration(ma, func(s benchSample) time.Duration { return s.outside })
		fmt.Fprintf(&b, "BENCH %s  %-26s %12s %10dms   target <= %s: %s\n", k.kind, "outside kubeadm's phases", "-",
			out.Milliseconds(), benchTargetOut, metWord(out <= benchTargetOut))
		if k.kind != "init" {
			// Two waits of a join are the cluster's, not machineadm's
			// work: wait-cluster-info asks until cluster-info is signed for
			// the token (a plain kubeadm join waits for it too, inside its
			// preflight), and the Node annotation, which the Cluster API
			// provider reads, waits for the kubelet to register its Node
			// after TLS bootstrap (plain kubeadm exits without it). The
			// target line above counts both; this one splits them out.
			uns := medianDuration(ma, func(s benchSample) time.Duration { return s.unsigned })
			reg := medianDuration(ma, func(s benchSample) time.Duration { return s.nodeWait })
			own := medianDuration(ma, benchSample.ownTime)
			fmt.Fprintf(&b, "BENCH %s  of which waiting for the cluster's signer (wait-cluster-info before the signature was there) %dms, for the kubelet to register its Node (the Node annotation) %dms; the rest, machineadm's own, %dms (<= %s: %s)\n",
				k.kind, uns.Milliseconds(), reg.Milliseconds(), own.Milliseconds(), benchTargetOut, metWord(own <= benchTargetOut))
		}
		// machineadm's own time against two baselines measured in the
		// same machine right after each sample: the harness's exec alone
		// (not machineadm's), and the harness's exec of plain kubeadm's
		// binary (the process start and exit a plain kubeadm run pays as
		// well, outside any of its phases). Splits for reading: the target
		// lines above count all of it.
		med := func(f func(s benchSample) time.Duration) time.Duration { return medianDuration(ma, f) }
		netHarness := med(func(s benchSample) time.Duration { return s.ownTime() - s.trueExec })
		beyond := med(func(s benchSample) time.Duration { return s.ownTime() - s.kubeadmVersionExec })
		fmt.Fprintf(&b, "BENCH %s  machineadm's own less the harness's exec (a `true` exec, median %dms): %dms (<= %s: %s); less plain kubeadm's process start and exit too (a `kubeadm version` exec, median %dms): %dms (<= %s: %s)\n",
			k.kind, med(func(s benchSample) time.Duration { return s.trueExec }).Milliseconds(), netHarness.Milliseconds(), benchTargetOut, metWord(netHarness <= benchTargetOut),
			med(func(s benchSample) time.Duration { return s.kubeadmVersionExec }).Milliseconds(), beyond.Milliseconds(), benchTargetOut, metWord(beyond <= benchTargetOut))
		fmt.Fprintf(&b, "BENCH %s  machineadm's own phases (median): %s\n", k.kind, ownMedians(ma))
		fmt.Fprintf(&b, "BENCH %s  outside kubeadm's phases, where (medians): %s\n", k.kind, outsideBreakdown(ma))
		for i := range ka {
			extra := ""
			if k.kind != "init" {
				extra = fmt.Sprintf(", unsigned %dms", ma[i].unsigned.Milliseconds())
			}
			if k.kind == "first-join" {
				extra += fmt.Sprintf("; init start -> worker Ready kubeadm %.2fs machineadm %.2fs", ka[i].fromInit.Seconds(), ma[i].fromInit.Seconds())
			}
			fmt.Fprintf(&b, "BENCH %s  sample %d: kubeadm wall %.2fs exec %.2fs rss %.1fMi | machineadm wall %.2fs exec %.2fs rss %.1fMi outside %dms (before+after the report span %dms: before %dms, after %dms; Node wait %dms, writers %s, version exec %dms, true exec %dms, kubeadm version exec %dms%s)\n",
				k.kind, i, ka[i].wall.Seconds(), ka[i].exec.Seconds(), rss(ka[i]),
				ma[i].wall.Seconds(), ma[i].exec.Seconds(), rss(ma[i]), ma[i].outside.Milliseconds(), (ma[i].exec - ma[i].span).Milliseconds(),
				ma[i].beforeSpan.Milliseconds(), (ma[i].exec - ma[i].span - ma[i].beforeSpan).Milliseconds(), ma[i].nodeWait.Milliseconds(), writerTimes(ma[i].writers), ma[i].versionExec.Milliseconds(), ma[i].trueExec.Milliseconds(), ma[i].kubeadmVersionExec.Milliseconds(), extra)
		}
	}
	return b.String()
}

// medianDuration is the median of f over ss.
func medianDuration(ss []benchSample, f func(benchSample) time.Duration) time.Duration {
	return time.Duration(median(values(ss, func(s benchSample) float64 { return float64(f(s)) })))
}

// ownTime is machineadm's own share of the time outside kubeadm's
// phases: all of it less the cluster's waits (the signer's, for a join's
// wait-cluster-info, and the kubelet's registration of its Node).
func (s benchSample) ownTime() time.Duration { return s.outside - s.unsigned - s.nodeWait }

func metWord(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func values(ss []benchSample, f func(benchSample) float64) []float64 {
	var v []float64
	for _, s := range ss {
		v = append(v, f(s))
	}
	return v
}

// pairRatio is the median of machineadm/kubeadm over samples of the same
// index.
func pairRatio(ka, ma []benchSample, f func(benchSample) float64) float64 {
	var r []float64
	for i := range min(len(ka), len(ma)) {
		r = append(r, f(ma[i])/f(ka[i]))
	}
	return median(r)
}

// median of v (the mean of the middle two for an even count); 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// outsideBreakdown splits machineadm's time outside kubeadm's phases:
// inside the report's span its own phases and the time between phases
// (state records, console, provisional reports), and before and after the
// span (process start and exit, reading and checking the spec, the final
// report's writers, the harness's exec), with the final writers' medians
// (they run concurrently: the slowest is what the run waits for), the Node
// annotation's wait for the kubelet to register its Node, and a
// `machineadm version` exec for scale.
func outsideBreakdown(ss []benchSample) string {
	med := func(f func(s benchSample) time.Duration) time.Duration { return medianDuration(ss, f) }
	ownSum := func(s benchSample) time.Duration {
		var d time.Duration
		for _, v := range s.own {
			d += v
		}
		return d
	}
	inSpan := func(s benchSample) time.Duration { return s.outside - (s.exec - s.span) }
	writer := func(name string) func(s benchSample) time.Duration {
		return func(s benchSample) time.Duration { return s.writers[name] }
	}
	return fmt.Sprintf("in the report's span %dms (own phases %dms, between phases %dms); before and after the span %dms (before %dms, after %dms; the final writers, concurrent: node-annotation %dms, of which waiting for the kubelet to register its Node %dms, file %dms; a `machineadm version` exec: %dms)",
		med(inSpan).Milliseconds(), med(ownSum).Milliseconds(), med(func(s benchSample) time.Duration { return inSpan(s) - ownSum(s) }).Milliseconds(),
		med(func(s benchSample) time.Duration { return s.exec - s.span }).Milliseconds(),
		med(func(s benchSample) time.Duration { return s.beforeSpan }).Milliseconds(), med(func(s benchSample) time.Duration { return s.exec - s.span - s.beforeSpan }).Milliseconds(),
		med(writer("node-annotation")).Milliseconds(), med(func(s benchSample) time.Duration { return s.nodeWait }).Milliseconds(), med(writer("file")).Milliseconds(),
		med(func(s benchSample) time.Duration { return s.versionExec }).Milliseconds())
}

// writerTimes lists the final writers' durations, longest first.
func writerTimes(ws map[string]time.Duration) string {
	names := slices.Collect(maps.Keys(ws))
	sort.Slice(names, func(i, j int) bool {
		return ws[names[i]] > ws[names[j]] || (ws[names[i]] == ws[names[j]] && names[i] < names[j])
	})
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %dms", n, ws[n].Milliseconds()))
	}
	return strings.Join(parts, " ")
}

// ownMedians lists machineadm's own phases with their median durations,
// longest first.
func ownMedians(ss []benchSample) string {
	by := map[string][]float64{}
	for _, s := range ss {
		for name, d := range s.own {
			by[name] = append(by[name], float64(d))
		}
	}
	type kv struct {
		name string
		d    time.Duration
	}
	var l []kv
	for name, v := range by {
		l = append(l, kv{name, time.Duration(median(v))})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].d > l[j].d || (l[i].d == l[j].d && l[i].name < l[j].name) })
	var parts []string
	for _, x := range l {
		parts = append(parts, fmt.Sprintf("%s %dms", x.name, x.d.Milliseconds()))
	}
	return strings.Join(parts, ", ")
}
