package e2e

// No e2e build tag: `make test` runs these on a Linux host (the reporter
// reads /proc; python3 needed, which hack/install-deps.sh installs).

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needPython3 returns the host's python3. Without one the test skips, or
// fails where CI=true: CI installs python3 (hack/install-deps.sh), so a
// missing one there must not pass as a skip.
func needPython3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			fatalln(t, "python3 is not installed (hack/install-deps.sh): the reporter is a Python program")
		}
		t.Skip("python3 is not installed: the reporter is a Python program")
	}
	return py
}

// runReporter runs peakReporter with the host's python3 around args and
// returns the parsed figures, the rest of standard error and the exit
// code.
func runReporter(t *testing.T, args ...string) (PeakMem, string, int) {
	t.Helper()
	py := needPython3(t)
	cmd := exec.Command(py, append([]string{"-c", peakReporter}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		fatalln(t, err)
	}
	rest, p, perr := parsePeak(stderr.String())
	if perr != nil {
		fatalf(t, "%v\nstderr: %s", perr, stderr.String())
	}
	return p, rest, code
}

// allocate is a Python program that writes into 64 MiB of its own
// memory (anonymous pages, each touched) and keeps them for half a
// second, longer than many sampling periods.
const allocate = `import time; b = bytearray(b"x" * (64 << 20)); time.sleep(0.5); print(len(b))`

const mib = 1024

func TestPeakReporterSeesAnonymousMemory(t *testing.T) {
	p, _, code := runReporter(t, "python3", "-c", allocate)
	if code != 0 {
		fatalf(t, "exit code %d", code)
	}
	if p.MaxRSSKiB < 64*mib {
		errorf(t, "ru_maxrss %d KiB, want at least the 64 MiB the child wrote", p.MaxRSSKiB)
	}
	if p.AnonKiB < 60*mib || p.AnonKiB > p.MaxRSSKiB {
		errorf(t, "peak anonymous %d KiB, want at least 60 MiB and at most ru_maxrss %d KiB", p.AnonKiB, p.MaxRSSKiB)
	}
	if p.FileKiB <= 0 || p.Samples < 5 {
		errorf(t, "peak file-backed %d KiB over %d samples: want some of the interpreter's pages over at least 5 samples", p.FileKiB, p.Samples)
	}
}

// A grandchild counts: the allocating process is a child of sh, as
// kubeadm is under the benchmark's shell.
func TestPeakReporterWalksTheProcessTree(t *testing.T) {
	p, _, code := runReporter(t, "/bin/sh", "-c", `python3 -c '`+allocate+`' >/dev/null; exit 3`)
	if code != 3 {
		errorf(t, "exit code %d, want the command's 3", code)
	}
	if p.AnonKiB < 60*mib {
		errorf(t, "peak anonymous %d KiB, want at least the 60 MiB of sh's child", p.AnonKiB)
	}
}

func TestPeakReporterSmallCommand(t *testing.T) {
	p, rest, code := runReporter(t, "/bin/sh", "-c", "echo to-stderr >&2; sleep 0.2")
	if code != 0 || !strings.Contains(rest, "to-stderr") || strings.Contains(rest, peakMark) {
		errorf(t, "exit %d, stderr %q: want 0 and the command's own stderr without the reporter's line", code, rest)
	}
	if p.MaxRSSKiB <= 0 || p.AnonKiB >= 2*mib {
		errorf(t, "ru_maxrss %d KiB, anonymous %d KiB: want a positive peak and a small shell's anonymous set", p.MaxRSSKiB, p.AnonKiB)
	}
}

// The sampled figures are the command's, never the reporter's: until its
// exec the forked child is a copy of the Python reporter (about 7 MiB
// anonymous), which a first sample taken at once used to see for a
// command as small as sleep. Several runs, since that race was won most
// of the time, not always.
func TestPeakReporterSamplesOnlyTheCommand(t *testing.T) {
	for i := 0; i < 5; i++ {
		p, _, code := runReporter(t, "sleep", "0.3")
		if code != 0 {
			fatalf(t, "exit code %d", code)
		}
		if p.AnonKiB >= 2*mib || p.Samples == 0 {
			fatalf(t, "run %d: sleep's peak anonymous set %d KiB over %d samples: want sleep's own few hundred KiB, not the reporter's", i, p.AnonKiB, p.Samples)
		}
	}
}

// A command killed by a signal is measured, and the reporter exits as a
// shell reports it: 128+N (137 for SIGKILL), not a truncated negative.
func TestPeakReporterSignalledCommand(t *testing.T) {
	p, _, code := runReporter(t, "/bin/sh", "-c", "kill -KILL $$")
	if code != 128+int(syscall.SIGKILL) {
		errorf(t, "exit code %d, want %d (128+SIGKILL)", code, 128+int(syscall.SIGKILL))
	}
	if p.MaxRSSKiB <= 0 {
		errorf(t, "ru_maxrss %d KiB, want the killed command's peak", p.MaxRSSKiB)
	}
}

// SIGTERM sent to the reporter reaches the command: the command ends, is
// measured and the reporter exits with the command's 128+SIGTERM, instead
// of dying alone and leaving the command running unmeasured.
func TestPeakReporterForwardsTermination(t *testing.T) {
	py := needPython3(t)
	cmd := exec.Command(py, "-c", peakReporter, "/bin/sh", "-c", "echo ready; exec sleep 30")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// A command left running with the output pipes does not hold Wait.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		fatalln(t, err)
	}
	if err := cmd.Start(); err != nil {
		fatalln(t, err)
	}
	guard := time.AfterFunc(25*time.Second, func() { _ = cmd.Process.Kill() })
	defer guard.Stop()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		fatalf(t, "the command did not start: %q %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		fatalln(t, err)
	}
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		fatalln(t, err)
	}
	if code != 128+int(syscall.SIGTERM) {
		errorf(t, "exit code %d, want %d: the command's, ended by the forwarded SIGTERM\nstderr: %s", code, 128+int(syscall.SIGTERM), stderr.String())
	}
	if _, p, err := parsePeak(stderr.String()); err != nil || p.MaxRSSKiB <= 0 {
		errorf(t, "no measure after SIGTERM: %+v %v\nstderr: %s", p, err, stderr.String())
	}
}
