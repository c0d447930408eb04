package e2e

// No build tag: `make test` runs these on the host (python3 needed).

import (
	"os/exec"
	"strings"
	"testing"
)

// runReporter runs peakReporter with the host's python3 around args and
// returns the parsed figures, the rest of standard error and the exit
// code.
func runReporter(t *testing.T, args ...string) (PeakMem, string, int) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the reporter is a Python program")
	}
	cmd := exec.Command(py, append([]string{"-c", peakReporter}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	rest, p, perr := parsePeak(stderr.String())
	if perr != nil {
		t.Fatalf("%v\nstderr: %s", perr, stderr.String())
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
		t.Fatalf("exit code %d", code)
	}
	if p.MaxRSSKiB < 64*mib {
		t.Errorf("ru_maxrss %d KiB, want at least the 64 MiB the child wrote", p.MaxRSSKiB)
	}
	if p.AnonKiB < 60*mib || p.AnonKiB > p.MaxRSSKiB {
		t.Errorf("peak anonymous %d KiB, want at least 60 MiB and at most ru_maxrss %d KiB", p.AnonKiB, p.MaxRSSKiB)
	}
	if p.FileKiB <= 0 || p.Samples < 5 {
		t.Errorf("peak file-backed %d KiB over %d samples: want some of the interpreter's pages over at least 5 samples", p.FileKiB, p.Samples)
	}
}

// A grandchild counts: the allocating process is a child of sh, as
// kubeadm is under the benchmark's shell.
func TestPeakReporterWalksTheProcessTree(t *testing.T) {
	p, _, code := runReporter(t, "/bin/sh", "-c", `python3 -c '`+allocate+`' >/dev/null; exit 3`)
	if code != 3 {
		t.Errorf("exit code %d, want the command's 3", code)
	}
	if p.AnonKiB < 60*mib {
		t.Errorf("peak anonymous %d KiB, want at least the 60 MiB of sh's child", p.AnonKiB)
	}
}

func TestPeakReporterSmallCommand(t *testing.T) {
	p, rest, code := runReporter(t, "/bin/sh", "-c", "echo to-stderr >&2; sleep 0.2")
	if code != 0 || !strings.Contains(rest, "to-stderr") || strings.Contains(rest, peakMark) {
		t.Errorf("exit %d, stderr %q: want 0 and the command's own stderr without the reporter's line", code, rest)
	}
	if p.MaxRSSKiB <= 0 || p.AnonKiB >= 32*mib {
		t.Errorf("ru_maxrss %d KiB, anonymous %d KiB: want a positive peak and a small shell's anonymous set", p.MaxRSSKiB, p.AnonKiB)
	}
}

func TestParsePeak(t *testing.T) {
	rest, p, err := parsePeak("out\nmore\n" + peakMark + "maxrss-kib=100 anon-kib=40 file-kib=55 samples=7\n")
	if err != nil || rest != "out\nmore" || p != (PeakMem{MaxRSSKiB: 100, AnonKiB: 40, FileKiB: 55, Samples: 7}) {
		t.Errorf("got %q %+v %v", rest, p, err)
	}
	for _, bad := range []string{
		"no line at all",
		"\n" + peakMark + "maxrss-kib=100 anon-kib=40 file-kib=55",               // a field missing
		"\n" + peakMark + "maxrss-kib=100 anon-kib=x file-kib=55 samples=1",      // not a number
		"\n" + peakMark + "maxrss-kib=100 anon-kib=40 file-kib=55 samples=1 z=1", // unknown
		"\n" + peakMark + "maxrss-kib=-1 anon-kib=40 file-kib=55 samples=1",      // negative
	} {
		if _, _, err := parsePeak(bad); err == nil {
			t.Errorf("parsePeak(%q) accepted it", bad)
		}
	}
}
