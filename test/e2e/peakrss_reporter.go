package e2e

// This file has no build tag: its reporter and parser are unit-tested on
// the host by `make test` (peakrss_test.go), without the e2e machines.

import (
	"fmt"
	"strconv"
	"strings"
)

// peakMark starts the line peakReporter writes last to standard error.
const peakMark = "machineadm-e2e-peak "

// peakSampleEvery is peakReporter's sampling period (seconds, as Python's
// time.sleep takes it).
const peakSampleEvery = "0.02"

// peakReporter is a Python program that runs its arguments as a child
// made with fork (not vfork: the child's peak starts from the reporter's
// own few MiB, not from a large parent's) and, from the child's exec of
// the command (never the reporter's own copy before it) until the child
// exits, every peakSampleEvery reads RssAnon and RssFile from /proc/PID/status
// of the child and of every descendant (found through
// /proc/PID/task/TID/children). It then reaps the child with wait4 and
// writes, on a last line of standard error after peakMark, the child's
// ru_maxrss (KiB: the largest peak of one process of the waited-for
// tree), the largest RssAnon and the largest RssFile one process had at
// any sample (KiB), and the number of samples; it exits with the child's
// exit code, 128+N when a signal N killed it (as a shell reports it).
// SIGTERM, SIGINT, SIGHUP and SIGQUIT sent to the reporter are passed on
// to the child, which is then reaped and measured as usual. A sample sees what is resident at that instant, so a peak
// shorter than the period may be missed: the anonymous and file figures
// are lower bounds, ru_maxrss is the kernel's exact high-water mark.
const peakReporter = `import os, signal, sys, time
# A termination signal sent to the reporter is passed on to the command,
# which is then reaped and measured as usual: the command is not left
# running without its reporter. The signals stay blocked from before the
# fork until the handler is in place, so none is lost or kills the
# reporter in between; the child unblocks them before its exec.
sigs = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
# The pipe is close-on-exec: its write end closes when the child has
# exec'd the command (or exited).
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        os.close(r)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
os.close(w)

def forward(sig, frame):
    try:
        os.kill(pid, sig)
    except OSError:
        pass

for s in sigs:
    signal.signal(s, forward)
signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)

def tree(root):
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for t in tids:
            try:
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    todo.extend(int(c) for c in f.read().split())
            except OSError:
                pass
    return out

def status(p):
    anon = fil = 0
    try:
        with open("/proc/%d/status" % p) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = int(line.split()[1])
                elif line.startswith("RssFile:"):
                    fil = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return anon, fil

# No sample before the exec: until then the child is a copy of this
# reporter, whose pages are not the command's.
os.read(r, 1)
os.close(r)

anon = fil = samples = 0
while True:
    # WNOWAIT leaves the exited child a zombie, so its /proc entry and
    # ru_maxrss stay until wait4 below.
    try:
        done = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        done = True
    if done:
        break
    samples += 1
    for p in tree(pid):
        a, f = status(p)
        anon, fil = max(anon, a), max(fil, f)
    time.sleep(` + peakSampleEvery + `)
_, st, ru = os.wait4(pid, 0)
sys.stderr.write("\n` + peakMark + `maxrss-kib=%d anon-kib=%d file-kib=%d samples=%d\n" % (ru.ru_maxrss, anon, fil, samples))
# A command killed by signal N exits 128+N, as a shell reports it.
code = os.waitstatus_to_exitcode(st)
sys.exit(128 - code if code < 0 else code & 0xff)
`

// PeakMem is what peakReporter measured of a command's process tree, in
// KiB.
type PeakMem struct {
	// MaxRSSKiB is wait4's ru_maxrss: the peak resident set (anonymous
	// and file-backed pages together) of the largest process of the
	// waited-for tree, exact (the kernel's high-water mark, as GNU time
	// reports it). The benchmarks' targets are judged on it.
	MaxRSSKiB int64
	// AnonKiB is the largest RssAnon (memory the program allocated: heap,
	// stacks, the runtime's own) any one process of the tree had at a
	// sample; FileKiB the largest RssFile (pages of files mapped in,
	// mostly the binary's own code and read-only data). Sampled every
	// peakSampleEvery, so lower bounds.
	AnonKiB, FileKiB int64
	// Samples is how many times the tree was sampled.
	Samples int
}

// parsePeak takes peakReporter's last line out of stderr: the rest of
// stderr and the figures, or an error when the line is missing or
// malformed.
func parsePeak(stderr string) (string, PeakMem, error) {
	i := strings.LastIndex(stderr, "\n"+peakMark)
	if i < 0 {
		return stderr, PeakMem{}, fmt.Errorf("no peak memory line (%q) in the output", strings.TrimSpace(peakMark))
	}
	line := strings.TrimSpace(stderr[i+1+len(peakMark):])
	rest := stderr[:i]
	var p PeakMem
	seen := map[string]bool{}
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || n < 0 {
			return rest, PeakMem{}, fmt.Errorf("peak memory line %q: bad field %q", line, f)
		}
		switch k {
		case "maxrss-kib":
			p.MaxRSSKiB = n
		case "anon-kib":
			p.AnonKiB = n
		case "file-kib":
			p.FileKiB = n
		case "samples":
			p.Samples = int(n)
		default:
			return rest, PeakMem{}, fmt.Errorf("peak memory line %q: unknown field %q", line, k)
		}
		seen[k] = true
	}
	for _, k := range []string{"maxrss-kib", "anon-kib", "file-kib", "samples"} {
		if !seen[k] {
			return rest, PeakMem{}, fmt.Errorf("peak memory line %q: no %s", line, k)
		}
	}
	return rest, p, nil
}
