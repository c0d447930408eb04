//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// rssMark starts the line rssReporter writes last to standard error.
const rssMark = "machineadm-e2e-maxrss-kib="

// rssReporter is a Python program, run in the machine, that runs its
// arguments as a child made with fork (not vfork: the child's peak starts
// from the reporter's own few MiB, not from a large parent's), waits for
// it with wait4 and writes the child's ru_maxrss (KiB) on a last line of
// standard error after rssMark; it exits with the child's exit code.
const rssReporter = `import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
sys.stderr.write("\n` + rssMark + `%d\n" % ru.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status) & 0xff)
`

// ExecPeakRSS is Exec with the peak resident set of the command's process
// tree measured in the machine (ExecResult.MaxRSSKiB; python3 of the
// machine's image runs rssReporter): wait4's ru_maxrss, as GNU time
// reports it, the largest peak of any one process of the tree that was
// waited for (the command's and those of the children it waited for, not
// their sum). A child started by vfork, as Go's os/exec does, counts from
// its parent's peak, so a Go program's children never raise its figure
// above its own. The reporter's line is taken out of Stderr. A command
// that leaves no measure is an error.
func (m *Machine) ExecPeakRSS(ctx context.Context, stdin []byte, args ...string) (ExecResult, error) {
	res, err := m.Exec(ctx, stdin, append([]string{"python3", "-c", rssReporter}, args...)...)
	i := strings.LastIndex(res.Stderr, "\n"+rssMark)
	if i < 0 {
		if err == nil {
			err = fmt.Errorf("%s: %s: no peak RSS measured (python3 in the machine?)", m.Name, strings.Join(args, " "))
		}
		return res, err
	}
	line := strings.TrimSpace(res.Stderr[i+1+len(rssMark):])
	res.Stderr = res.Stderr[:i]
	kib, perr := strconv.ParseInt(line, 10, 64)
	if perr != nil && err == nil {
		err = fmt.Errorf("%s: peak RSS %q: %w", m.Name, line, perr)
	}
	res.MaxRSSKiB = kib
	return res, err
}
