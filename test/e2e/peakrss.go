//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
)

// ExecPeakRSS is Exec with the peak resident set of the command's process
// tree measured in the machine (ExecResult.MaxRSSKiB): ExecPeakMem's
// MaxRSSKiB.
func (m *Machine) ExecPeakRSS(ctx context.Context, stdin []byte, args ...string) (ExecResult, error) {
	res, _, err := m.ExecPeakMem(ctx, stdin, args...)
	return res, err
}

// ExecPeakMem is Exec with the command's memory measured in the machine
// by peakReporter (python3 of the machine's image runs it): wait4's
// ru_maxrss, as GNU time reports it, the largest peak of any one process
// of the tree that was waited for (the command's and those of the
// children it waited for, not their sum), and the largest anonymous and
// file-backed resident sets one process of the tree had, sampled every
// 20 ms (PeakMem). A child started by vfork, as Go's os/exec does, counts
// from its parent's peak in ru_maxrss, so a Go program's children never
// raise its figure above its own. ExecResult.MaxRSSKiB is set too; the
// reporter's line is taken out of Stderr. A command that leaves no
// measure is an error.
func (m *Machine) ExecPeakMem(ctx context.Context, stdin []byte, args ...string) (ExecResult, PeakMem, error) {
	res, err := m.Exec(ctx, stdin, append([]string{"python3", "-c", peakReporter}, args...)...)
	rest, p, perr := parsePeak(res.Stderr)
	res.Stderr = rest
	res.MaxRSSKiB = p.MaxRSSKiB
	if perr != nil && err == nil {
		err = fmt.Errorf("%s: %s: %w (python3 in the machine?)", m.Name, strings.Join(args, " "), perr)
	}
	return res, p, err
}
