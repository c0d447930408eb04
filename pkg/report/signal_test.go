//go:build unix

package report

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/redact"
)

// helperEnv makes the test binary run sigtermHelper instead of the tests.
const helperEnv = "MACHINEADM_REPORT_TEST_HELPER"

func TestMain(m *testing.M) {
	if root := os.Getenv(helperEnv); root != "" {
		sigtermHelper(root)
		return
	}
	os.Exit(m.Run())
}

// helperToken is a secret the helper prints; it must not reach the report.
const helperToken = "q7w8e9.r1t2y3u4i5o6p7a8"

// sigtermHelper is a small bootstrap: it writes reports below root,
// watches SIGTERM/SIGINT as machineadm bootstrap does, finishes one phase,
// starts kubelet-start, says "ready" and waits in that phase for a signal.
func sigtermHelper(root string) {
	meta := Meta{Machine: Machine{Hostname: "helper", NodeName: "helper", MachineadmVersion: "v0.0.0-test", Role: "Worker", Action: "Join"}, Command: "bootstrap"}
	writers := []Writer{&FileWriter{Root: root, Path: DefaultPath}, &SentinelWriter{Root: root}, &SummaryWriter{Out: os.Stdout}}
	rec := NewRecorder(meta, writers, redact.New(helperToken), nil)
	stop := rec.WatchSignals(5*time.Second, func() { os.Exit(1) })
	defer stop()
	rec.Plan("preflight", "kubelet-start", "wait-control-plane")
	rec.PhaseStarted("preflight")
	rec.PhaseFinished("preflight", PhaseSucceeded, "")
	rec.PhaseStarted("kubelet-start")
	out := rec.OutputWriter(os.Stderr)
	fmt.Fprintf(out, "[kubelet-start] joining with token %s\n", helperToken)
	fmt.Println("ready")
	time.Sleep(time.Minute) // the phase "runs" until the signal
	os.Exit(3)
}

// TestSIGTERMMidPhase runs the helper as its own process, sends SIGTERM
// while kubelet-start runs, and checks it leaves a valid Failed report
// naming that phase with class Interrupted, and exits 1.
func TestSIGTERMMidPhase(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			root := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+root)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(stdout)
			if !lines.Scan() || lines.Text() != "ready" {
				cmd.Process.Kill()
				t.Fatalf("helper did not get ready: %q %s", lines.Text(), stderr.String())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var summary strings.Builder
			for lines.Scan() {
				summary.WriteString(lines.Text() + "\n")
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("helper did not exit after the signal")
			}
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Fatalf("exit code %d (%v), want 1; stderr:\n%s", code, err, stderr.String())
			}

			data, err := os.ReadFile(filepath.Join(root, DefaultPath))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Decode(data)
			if err != nil {
				t.Fatalf("report is not valid: %v\n%s", err, data)
			}
			if r.Result != ResultFailed || r.FailedPhase != "kubelet-start" || r.ErrorClass != errclass.Interrupted {
				t.Errorf("report: result %s phase %q class %s", r.Result, r.FailedPhase, r.ErrorClass)
			}
			if len(r.Phases) != 3 || r.Phases[1].Status != PhaseFailed || r.Phases[2].Status != PhaseSkipped {
				t.Errorf("phases: %+v", r.Phases)
			}
			if !strings.Contains(r.Error, "interrupted by signal "+sig.String()) {
				t.Errorf("error %q", r.Error)
			}
			if _, err := os.Stat(filepath.Join(root, DefaultSentinel)); !os.IsNotExist(err) {
				t.Error("an interrupted run must not leave the success sentinel")
			}
			if !strings.Contains(summary.String(), "FAILED in phase kubelet-start: Interrupted") {
				t.Errorf("stdout summary:\n%s", summary.String())
			}
			all := string(data) + summary.String() + stderr.String()
			if strings.Contains(all, helperToken) || !strings.Contains(string(data), "joining with token <redacted>") {
				t.Errorf("the token leaked or the output was not recorded:\n%s", all)
			}
		})
	}
}
