package report

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// fixtureFailed is a failed control-plane join: every kubeadm and host
// phase, the failure in kubelet-start (discovery), the rest not reached,
// and a 50-line log tail.
func fixtureFailed() *BootstrapReport {
	names := []string{"files", "kernel-modules", "sysctl", "containerd", "preflight",
		"control-plane-prepare/download-certs", "control-plane-prepare/certs", "control-plane-prepare/kubeconfig",
		"control-plane-prepare/control-plane", "kubelet-start", "control-plane-join/etcd",
		"control-plane-join/mark-control-plane", "wait-control-plane", "static-pods"}
	r := &BootstrapReport{
		APIVersion: APIVersion, Kind: Kind,
		Machine: Machine{Hostname: "cp-2.example.internal", NodeName: "cp-2", SpecName: "cluster-a-control-plane-x7k2p",
			MachineadmVersion: "v0.1.0", KubernetesVersion: "v1.37.2", Role: "ControlPlane", Action: "Join"},
		Command: "bootstrap", StartTime: t0, Result: ResultFailed,
		FailedPhase: "kubelet-start", ErrorClass: errclass.DiscoveryFailed,
		Hint:  errclass.DefaultHint(errclass.DiscoveryFailed),
		Error: `couldn't validate the identity of the API Server: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "sha256:` + strings.Repeat("5f", 32) + `" are pinned`,
	}
	at := t0
	for i, n := range names {
		p := Phase{Name: n, StartTime: at}
		switch {
		case i < 4:
			p.Status, p.DurationMs = PhaseUnchanged, int64(3+i)
		case i < 9:
			p.Status, p.DurationMs = PhaseSucceeded, int64(400*(i-3))
		case n == "kubelet-start":
			p.Status, p.DurationMs, p.Message = PhaseFailed, 300000, r.Error
		default:
			p.Status, p.Message = PhaseSkipped, "not reached: an earlier phase failed"
		}
		at = at.Add(time.Duration(p.DurationMs) * time.Millisecond)
		r.Phases = append(r.Phases, p)
	}
	r.EndTime = at
	for i := range 50 {
		r.LogTail = append(r.LogTail, fmt.Sprintf("I0314 09:3%d:%02d.000000    4242 token.go:%d] [discovery] Retrying due to error: could not find a JWS signature in the cluster-info ConfigMap for token ID \"abcdef\" (attempt %d)", i/10, i, 200+i, i))
	}
	return r
}

func fixtureSucceeded() *BootstrapReport {
	r := fixtureFailed()
	r.Result, r.FailedPhase, r.ErrorClass, r.Hint, r.Error, r.LogTail = ResultSucceeded, "", "", "", "", nil
	for i := range r.Phases {
		p := &r.Phases[i]
		if p.Status != PhaseUnchanged {
			p.Status, p.Message, p.DurationMs = PhaseSucceeded, "", 1500
		}
	}
	last := &r.Phases[len(r.Phases)-1]
	last.Status, last.Message, last.DurationMs = PhaseSkipped, "no static pods in the spec", 0
	return r
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n--- got\n%s--- want\n%s", name, got, want)
	}
}

func checkScreen(t *testing.T, text string, width, height int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) > height {
		t.Errorf("summary has %d lines, more than %d", len(lines), height)
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > width {
			t.Errorf("line %d has %d characters, more than %d: %q", i+1, n, width, l)
		}
	}
}

func TestSummaryGolden(t *testing.T) {
	failed := Summary(fixtureFailed(), OneScreen("/var/lib/machineadm/report.json"))
	checkScreen(t, failed, ScreenWidth, ScreenHeight)
	golden(t, "summary-failed.txt", failed)
	for _, want := range []string{"FAILED in phase kubelet-start: DiscoveryFailed", "kubelet-start", "hint:", "log tail (last", "[discovery] Retrying", "report.json"} {
		if !strings.Contains(failed, want) {
			t.Errorf("one-screen failure summary lacks %q", want)
		}
	}

	ok := Summary(fixtureSucceeded(), OneScreen("/var/lib/machineadm/report.json"))
	checkScreen(t, ok, ScreenWidth, ScreenHeight)
	golden(t, "summary-succeeded.txt", ok)

	full := Summary(fixtureFailed(), SummaryOptions{Width: ScreenWidth})
	golden(t, "summary-failed-full.txt", full)
	if !strings.Contains(full, "(attempt 0)") || strings.Count(full, "not reached") != 4 {
		t.Error("the full view must hold the whole tail and every phase message")
	}
}

func TestSummaryFitsSmallScreens(t *testing.T) {
	for _, size := range [][2]int{{100, 24}, {80, 24}, {60, 12}, {100, 10}} {
		for _, r := range []*BootstrapReport{fixtureFailed(), fixtureSucceeded()} {
			text := Summary(r, SummaryOptions{Width: size[0], Height: size[1], ReportPath: "/var/lib/machineadm/report.json"})
			checkScreen(t, text, size[0], size[1])
			if !strings.Contains(strings.SplitN(text, "\n", 2)[0], "machineadm bootstrap") {
				t.Errorf("%dx%d: the title line must come first:\n%s", size[0], size[1], text)
			}
			if r.Result == ResultFailed && !strings.Contains(text, "kubelet-start") {
				t.Errorf("%dx%d: the failed phase must stay visible:\n%s", size[0], size[1], text)
			}
		}
	}
}

func TestSummaryEmpty(t *testing.T) {
	r := &BootstrapReport{APIVersion: APIVersion, Kind: Kind, Command: "bootstrap", Result: ResultFailed, ErrorClass: errclass.InvalidSpec,
		Error: "invalid machine spec s.yaml: 1 error(s)\n  spec.role: Required value", Hint: errclass.DefaultHint(errclass.InvalidSpec), StartTime: t0, EndTime: t0}
	text := Summary(r, OneScreen(""))
	for _, want := range []string{"machineadm bootstrap FAILED: InvalidSpec", "phases: none ran", "spec.role: Required value", "no output recorded"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0ms", 850 * time.Millisecond: "850ms", 12340 * time.Millisecond: "12.3s", 245 * time.Second: "4m05s", -1: "-"} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSummaryInvalidSpecShowsEveryProblem(t *testing.T) {
	msg := "invalid machine spec s.yaml: 8 error(s)"
	for i := range 8 {
		msg += fmt.Sprintf("\n  spec.host.files[%d].mode: Invalid value: \"999\": must be an octal mode", i)
	}
	r := &BootstrapReport{APIVersion: APIVersion, Kind: Kind, Command: "bootstrap", Result: ResultFailed, ErrorClass: errclass.InvalidSpec,
		Error: msg, Hint: errclass.DefaultHint(errclass.InvalidSpec), StartTime: t0, EndTime: t0}
	text := Summary(r, OneScreen("/var/lib/machineadm/report.json"))
	checkScreen(t, text, ScreenWidth, ScreenHeight)
	for i := range 8 {
		if !strings.Contains(text, fmt.Sprintf("files[%d]", i)) {
			t.Errorf("problem %d is missing:\n%s", i, text)
		}
	}
	if !strings.Contains(text, "no output recorded") || !strings.Contains(text, "full report:") {
		t.Errorf("summary:\n%s", text)
	}
}

// A report path too long for the footer's two mentions is named once,
// whole, rather than cut.
func TestSummaryFooterLongPath(t *testing.T) {
	long := "/tmp/machineadm-dry-run-" + strings.Repeat("x", 20) + "/var/lib/machineadm/report.json"
	text := Summary(fixtureFailed(), OneScreen(long))
	checkScreen(t, text, ScreenWidth, ScreenHeight)
	if !strings.HasSuffix(text, "full report: "+long+"\n") {
		t.Errorf("footer does not name %s whole:\n%s", long, text)
	}
}

// TestSummaryShowsTheUpgradesVersions: an upgrade's summary names the
// versions before and after; one that kept its version names it once.
func TestSummaryShowsTheUpgradesVersions(t *testing.T) {
	r := &BootstrapReport{Command: "upgrade", Result: ResultSucceeded, Machine: Machine{Hostname: "cp1", KubernetesVersion: "v1.37.2"},
		Upgrade: &Upgrade{FromVersion: "v1.36.3", ToVersion: "v1.37.2"}}
	if out := Summary(r, SummaryOptions{}); !strings.Contains(out, "kubernetes v1.36.3 -> v1.37.2") {
		t.Errorf("summary:\n%s", out)
	}
	r.Upgrade.FromVersion = "v1.37.2"
	if out := Summary(r, SummaryOptions{}); !strings.Contains(out, "kubernetes v1.37.2  ") || strings.Contains(out, "->") {
		t.Errorf("summary:\n%s", out)
	}
}
