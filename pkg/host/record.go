package host

import (
	"fmt"

	"github.com/machineadm/machineadm/pkg/host/files"
)

// hintLinked is the hint of an append refused because the file has
// other names (files.Change.Check).
const hintLinked = "the file has other names (hard links): remove them, or this name, and run again; nothing was written"

// overlayEntry is a file as a dry run has planned it (nothing written).
type overlayEntry struct {
	state files.State
}

// recorder applies (or, in a dry run, prints) one step's changes and
// collects the Result.
type recorder struct {
	env  *Env
	run  *run
	step string
	res  Result
}

// file brings one file to its desired state and reports whether it
// changed. field names the spec field the file comes from, for errors.
func (r *recorder) file(d files.Desired, field string) (bool, error) {
	hp, err := files.Resolve(r.env.root(), d.Path)
	if err != nil {
		return false, hostErr(hintWrite, "%s: %s: %w", field, d.Path, err)
	}
	cur, err := r.current(hp)
	if err == nil && d.Append {
		cur, err = cur.Load() // Append needs the current bytes
	}
	if err != nil {
		return false, hostErr(hintWrite, "%s: reading %s: %w", field, d.Path, err)
	}
	c := files.Plan(d, hp, cur)
	if !c.Changed() {
		return false, nil
	}
	// Refused in a dry run too (an append to a file with other names).
	if err := c.Check(); err != nil {
		return false, hostErr(hintLinked, "%s: %s: %w", field, d.Path, err)
	}
	r.res.Changed = true
	if r.env.DryRun {
		fmt.Fprint(r.env.out(), files.Diff(c))
		r.run.overlay[hp] = overlayEntry{state: c.New}
		r.res.Changes = append(r.res.Changes, wouldLine(c.Summary()))
		return true, nil
	}
	if err := files.Apply(c); err != nil {
		return false, hostErr(hintWrite, "%s: writing %s: %w", field, d.Path, err)
	}
	r.res.Changes = append(r.res.Changes, c.Summary())
	return true, nil
}

// current is the file's state, as planned earlier in a dry run or as it
// is on the host.
func (r *recorder) current(hostPath string) (files.State, error) {
	if r.env.DryRun {
		if e, ok := r.run.overlay[hostPath]; ok {
			return e.state, nil
		}
	}
	return files.ReadState(hostPath)
}

// live performs one change outside the file system (load a module, set a
// sysctl value, restart a service): in a dry run it only prints and
// records "would LINE".
func (r *recorder) live(line string, do func() error) error {
	r.res.Changed = true
	if r.env.DryRun {
		fmt.Fprintln(r.env.out(), "would "+line)
		r.res.Changes = append(r.res.Changes, "would "+line)
		return nil
	}
	if err := do(); err != nil {
		return err
	}
	r.res.Changes = append(r.res.Changes, pastTense(line))
	return nil
}

// note records a line that is not a change (a skipped action).
func (r *recorder) note(line string) {
	if r.env.DryRun {
		fmt.Fprintln(r.env.out(), "note: "+line)
	}
	r.env.log().Info(line, "step", r.step)
}

// pastTense turns the imperative lines used with live ("load X", "set Y",
// "restart Z") into report lines ("loaded X", …).
func pastTense(line string) string {
	for _, v := range []struct{ from, to string }{
		{"load ", "loaded "}, {"set ", "set "}, {"restart ", "restarted "}, {"reload ", "reloaded "}, {"wait ", "waited "},
	} {
		if len(line) >= len(v.from) && line[:len(v.from)] == v.from {
			return v.to + line[len(v.from):]
		}
	}
	return line
}

// wouldLine turns a file summary ("wrote X …") into its dry-run form
// ("would write X …").
func wouldLine(summary string) string { return files.Would(summary) }
