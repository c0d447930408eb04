package cpunits

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Verify runs `systemd-analyze verify` on a unit file (the binary in
// ExecStart= and the accounts must exist on the running system) and
// returns its complaints about that unit as an error.
func Verify(ctx context.Context, unitFile string, run Exec) error {
	if run == nil {
		run = RunCommand
	}
	out, err := run(ctx, "systemd-analyze", "verify", "--man=no", unitFile)
	var own []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, filepath.Base(unitFile)) {
			own = append(own, l)
		}
	}
	if err != nil || len(own) > 0 {
		return fmt.Errorf("systemd-analyze verify %s: %v: %s", filepath.Base(unitFile), err, strings.Join(own, "; "))
	}
	return nil
}

var exposureRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`) })

// Exposure runs `systemd-analyze security --offline=yes` on a unit file
// and returns its overall exposure level (0.0 safest to 10.0; systemd
// calls below 2.0 "OK") and the per-setting table.
func Exposure(ctx context.Context, unitFile string, run Exec) (float64, string, error) {
	if run == nil {
		run = RunCommand
	}
	out, err := run(ctx, "systemd-analyze", "security", "--offline=yes", "--no-pager", unitFile)
	m := exposureRE().FindSubmatch(out)
	if m == nil {
		return 0, string(out), fmt.Errorf("systemd-analyze security %s: %v: no exposure level in its output", filepath.Base(unitFile), err)
	}
	score, perr := strconv.ParseFloat(string(m[1]), 64)
	if perr != nil {
		return 0, string(out), perr
	}
	return score, string(out), nil
}

// ExecIn returns an Exec that runs commands in dir.
func ExecIn(dir string) Exec {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, CommandTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
}
