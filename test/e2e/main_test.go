//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestMain first moves the test binary into a network namespace of its own
// (runInOwnNetns), then creates the harness environment once, runs the
// scenarios and tears everything down: machines, cgroups, the bridge and,
// unless a failed run is kept with MACHINEADM_E2E_KEEP=1, the run
// directory. A successful demo run (demo.go) keeps its cluster instead.
// A failed run ends with the failed checks' messages (writeFailures).
func TestMain(m *testing.M) {
	if os.Getenv(inNetnsEnv) == "" {
		os.Exit(runInOwnNetns())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	e, err := setupEnv(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		// The bridge may exist already.
		_ = deleteBridge(context.Background())
		os.Exit(1)
	}
	theEnv = e
	code := m.Run()
	e.demo.close(code != 0)
	if code == 0 && e.demo != nil {
		// The demo's cluster stays up until `make demo-down`.
		os.Exit(0)
	}
	if err := e.teardown(code != 0); err != nil {
		fmt.Fprintln(os.Stderr, "e2e teardown:", err)
		if code == 0 {
			code = 1
		}
	}
	if code != 0 && e.keep {
		fmt.Fprintln(os.Stderr, "e2e: machines of the failed run kept in", e.runDir)
	}
	// Last, where a CI log's tail shows it: what failed.
	if code != 0 {
		writeFailures(os.Stdout)
	}
	os.Exit(code)
}

// timing logs one measured duration in a form `make e2e` output can be
// searched for ("TIMING name seconds").
func timing(t *testing.T, name string, d time.Duration) {
	t.Helper()
	t.Logf("TIMING %s %.1fs", name, d.Seconds())
}
