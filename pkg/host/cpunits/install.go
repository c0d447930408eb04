package cpunits

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/machineadm/machineadm/pkg/host/files"
)

// Manager is the part of the service manager Install needs;
// service.Systemd implements it over D-Bus, service.Recorder in tests.
type Manager interface {
	// DaemonReload makes systemd re-read unit files.
	DaemonReload(ctx context.Context) error
	// Restart (re)starts a unit and waits for the job.
	Restart(ctx context.Context, unit string) error
	// Start starts a unit (a no-op when it is active) and waits for the
	// job.
	Start(ctx context.Context, unit string) error
}

// Result is what Install did.
type Result struct {
	// Changed lists the units whose files changed (and were restarted).
	Changed []string
	// Changes are human-readable lines, never file contents.
	Changes []string
}

// Install writes the files of comps under root, enables each unit for
// WantedBy (the symbolic link `systemctl enable` makes), reloads systemd
// when anything changed, then starts the units in order: a unit whose
// files changed (also its credentials' files: StampCredentials) is
// restarted, any other only started (a no-op when it runs). A unit file
// that changed only in directives systemd applies to a running service at
// the reload (reloadOnlyKeys: TimeoutStopSec, say) counts as changed but
// is only started, so a node whose units an earlier machineadm wrote does
// not restart its control plane for them. So a second Install with the
// same components changes nothing.
// With dryRun it writes the plan with diffs to out and touches nothing;
// with a nil m (an offline root) nothing is reloaded or started.
func Install(ctx context.Context, root string, comps []Component, m Manager, dryRun bool, out io.Writer) (Result, error) {
	var res Result
	changed := map[string]bool{}
	restart := map[string]bool{}
	for _, c := range comps {
		c, err := StampCredentials(root, c)
		if err != nil {
			return res, err
		}
		rendered, err := Render(c)
		if err != nil {
			return res, err
		}
		for _, f := range rendered {
			ch, err := planFile(root, f)
			if err != nil {
				return res, err
			}
			res.Changes = append(res.Changes, ch.Summary())
			if !ch.Changed() {
				continue
			}
			changed[c.Unit()] = true
			if !reloadOnly(ch) {
				restart[c.Unit()] = true
			}
			if dryRun {
				if out != nil {
					fmt.Fprint(out, files.Diff(ch))
				}
				continue
			}
			if err := os.MkdirAll(path.Dir(ch.HostPath), 0o755); err != nil {
				return res, err
			}
			if err := files.Apply(ch); err != nil {
				return res, fmt.Errorf("writing %s: %w", f.Path, err)
			}
		}
		line, err := enable(root, c, dryRun)
		if err != nil {
			return res, err
		}
		if line != "" {
			changed[c.Unit()] = true
			restart[c.Unit()] = true
			res.Changes = append(res.Changes, line)
		}
	}
	for _, c := range comps {
		if changed[c.Unit()] {
			res.Changed = append(res.Changed, c.Unit())
		}
	}
	if dryRun || m == nil {
		return res, nil
	}
	if len(res.Changed) > 0 {
		if err := m.DaemonReload(ctx); err != nil {
			return res, err
		}
	}
	for _, c := range comps {
		op, verb := m.Start, "started"
		switch {
		case restart[c.Unit()]:
			op, verb = m.Restart, "restarted"
		case changed[c.Unit()]:
			verb = "started (its unit changed only in how it is stopped or restarted: the reload applied that)"
		}
		if err := op(ctx, c.Unit()); err != nil {
			return res, err
		}
		res.Changes = append(res.Changes, verb+" "+c.Unit())
	}
	return res, nil
}

// enable makes the WantedBy link of c's unit, as `systemctl enable` does,
// and returns a change line, or "" when the link is already right.
func enable(root string, c Component, dryRun bool) (string, error) {
	link := path.Join(UnitDir, WantedBy+".wants", c.Unit())
	hp, err := files.Resolve(root, path.Dir(link))
	if err != nil {
		return "", err
	}
	hp = path.Join(hp, c.Unit())
	target, err := os.Readlink(hp)
	switch {
	case err == nil && target == c.UnitPath():
		return "", nil
	case err == nil, errors.Is(err, fs.ErrInvalid):
		// A link elsewhere or a file: replace it.
		if !dryRun {
			if err := os.Remove(hp); err != nil {
				return "", err
			}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	if !dryRun {
		if err := os.MkdirAll(path.Dir(hp), 0o755); err != nil {
			return "", err
		}
		if err := os.Symlink(c.UnitPath(), hp); err != nil {
			return "", err
		}
	}
	return "enabled " + c.Unit() + " (" + link + " → " + c.UnitPath() + ")", nil
}

// reloadOnlyKeys are the unit directives that say how systemd stops and
// restarts a service, not how it runs: a daemon-reload applies them to
// the running service, so a change of them alone needs no restart.
var reloadOnlyKeys = []string{"TimeoutStopSec", "RestartSec", "StartLimitIntervalSec", "StartLimitBurst"}

// reloadOnly reports whether ch replaces a unit file (*.service) whose
// content differs from the desired one only in lines of reloadOnlyKeys.
// Any other change, a new file, or content not held in memory is not.
func reloadOnly(ch files.Change) bool {
	if !strings.HasSuffix(ch.Desired.Path, ".service") || !ch.Old.Exists || ch.Old.Content == nil || ch.New.Content == nil {
		return false
	}
	strip := func(b []byte) []string {
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			k, _, ok := strings.Cut(strings.TrimSpace(l), "=")
			if ok && slices.Contains(reloadOnlyKeys, strings.TrimSpace(k)) {
				continue
			}
			out = append(out, l)
		}
		return out
	}
	return slices.Equal(strip(ch.Old.Content), strip(ch.New.Content))
}
