//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/machineadm/machineadm/pkg/report"
)

// `make demo` (hack/e2e/demo.sh) runs scenario 1 for a person and keeps its
// cluster. demo.sh makes a named network namespace that outlives the test
// (demoNetns), runs the test in it (MACHINEADM_E2E_NETNS) with
// MACHINEADM_E2E_DEMO_DIR set, and shows the narrative the test writes to
// that directory while the test's own output goes to a log. In a demo run:
//   - only scenario 1 runs;
//   - the machines are detached (no parent-death signal), and on success
//     TestMain leaves them, their run directory and the bridge as they are;
//     a failed demo is torn down like any run;
//   - the directory gets the cluster's admin kubeconfig and both outcome
//     reports (demoKubeconfig, demoReport).
//
// `make demo-down` removes the kept cluster; while the namespace exists, an
// e2e run that is not the demo refuses to start (setupEnv), since its
// clean-up would remove the demo's machines.
const (
	demoDirEnv = "MACHINEADM_E2E_DEMO_DIR"
	// netnsEnv names a network namespace file (/run/netns/NAME) to run the
	// harness in instead of a new, anonymous one (netns.go).
	netnsEnv = "MACHINEADM_E2E_NETNS"
	// demoNetns is the demo's network namespace (keep in sync with
	// DEMO_NETNS in hack/e2e/lib.sh).
	demoNetns = "/run/netns/machineadm-demo"
	// demoNarrative is the file in the demo directory the narrative goes to.
	demoNarrative = "narrative"
	// demoKubeconfig is cp1's admin.conf, copied into the demo directory
	// (0600) for `make demo-kubectl`.
	demoKubeconfig = "kubeconfig"
	// demoStepWidth is how wide a step's label is padded (with dots) before
	// its duration.
	demoStepWidth = 84
	// demoReportHeight is the number of lines each outcome report gets in
	// the demo's output: the one-screen view of `machineadm report`,
	// shorter, so both reports and the rest fit one screen.
	demoReportHeight = 9
)

// demo writes the narrative of a demo run. A nil *demo (not a demo run)
// writes nothing, so scenarios call its methods unconditionally.
type demo struct {
	dir       string
	out       *os.File
	stepStart time.Time
	inStep    bool
}

// openDemo returns the demo of this run: nil without MACHINEADM_E2E_DEMO_DIR;
// an error when the directory's narrative file cannot be opened or the
// harness does not run in the demo's network namespace (its cluster could
// not be reached after the test).
func openDemo() (*demo, error) {
	dir := os.Getenv(demoDirEnv)
	if dir == "" {
		return nil, nil
	}
	if os.Getenv(netnsEnv) != demoNetns {
		return nil, fmt.Errorf("%s is set but %s is %q, not the demo's network namespace %s", demoDirEnv, netnsEnv, os.Getenv(netnsEnv), demoNetns)
	}
	f, err := os.OpenFile(filepath.Join(dir, demoNarrative), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("demo narrative: %w", err)
	}
	return &demo{dir: dir, out: f}, nil
}

// demoUp reports whether the demo's network namespace exists: a cluster of
// `make demo` is up, being made, or left behind.
func demoUp() bool {
	_, err := os.Lstat(demoNetns)
	return err == nil
}

// step starts a step: its label, padded with dots, without a line end;
// done ends the line with the step's duration.
func (d *demo) step(label string) {
	if d == nil {
		return
	}
	d.endStep("")
	pad := max(3, demoStepWidth-len(label)-1)
	fmt.Fprintf(d.out, "%s %s ", label, strings.Repeat(".", pad))
	d.stepStart, d.inStep = time.Now(), true
}

// done ends the current step, showing how long it took.
func (d *demo) done() {
	if d == nil || !d.inStep {
		return
	}
	d.endStep(demoDuration(time.Since(d.stepStart)))
}

func (d *demo) endStep(s string) {
	if d.inStep {
		fmt.Fprintln(d.out, s)
		d.inStep = false
	}
}

// printf writes narrative text as is.
func (d *demo) printf(format string, args ...any) {
	if d == nil {
		return
	}
	d.endStep("")
	fmt.Fprintf(d.out, format, args...)
}

// keep copies what `make demo-kubectl` and a person need from the kept
// cluster into the demo directory, cp1's admin kubeconfig and each
// machine's outcome report, and shows each report as `machineadm report`
// does, on demoReportHeight lines. A success's log tail (kubeadm's last
// lines: its closing advice) is left to the full view the footer names,
// so the lines go to the phases.
func (d *demo) keep(cp *Machine, ms ...*Machine) error {
	if d == nil {
		return nil
	}
	if err := copyFile(filepath.Join(cp.Root, "etc/kubernetes/admin.conf"), filepath.Join(d.dir, demoKubeconfig), 0o600); err != nil {
		return fmt.Errorf("demo kubeconfig: %w", err)
	}
	var errs []error
	for _, m := range ms {
		dst := filepath.Join(d.dir, m.Name+"-report.json")
		if err := copyFile(filepath.Join(m.Root, reportPath), dst, 0o600); err != nil {
			errs = append(errs, fmt.Errorf("%s: outcome report: %w", m.Name, err))
			continue
		}
		r, err := report.ReadFile(dst)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
			continue
		}
		if r.Result == report.ResultSucceeded {
			r.LogTail = nil
		}
		d.printf("\n%s", report.Summary(r, report.SummaryOptions{
			Width:  report.ScreenWidth,
			Height: demoReportHeight,
			Footer: "more: bin/machineadm report --full " + dst,
		}))
	}
	return errors.Join(errs...)
}

// close ends an unfinished step's line, with FAILED when the run failed,
// and closes the narrative.
func (d *demo) close(failed bool) {
	if d == nil {
		return
	}
	if failed {
		d.endStep("FAILED")
	}
	d.endStep("")
	_ = d.out.Close()
}

// demoDuration is a duration as the demo shows it: 9s, 1m02s.
func demoDuration(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}
