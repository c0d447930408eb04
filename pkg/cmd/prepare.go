package cmd

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/session"
)

type prepareFlags struct {
	file       string
	root       string
	dryRun     bool
	skipPhases []string
	identity   string
}

// newPrepareCommand builds `machineadm prepare`: host preparation only.
func newPrepareCommand(o *options) *cobra.Command {
	f := &prepareFlags{}
	c := &cobra.Command{
		Use:   "prepare -f SPEC [--root DIR] [--dry-run] [--skip-phases a,b]",
		Short: prepareShort(),
		Long: `Runs the host group of the bootstrap workflow alone, with the same phases,
statuses, report entries and console lines as bootstrap, in this order
(docs/host-preparation.md says what each one writes):

` + preparePhases() + `
An unknown sysctl key, an unknown owner or a remote file whose sha256 does not
match stops the run in host-check with nothing changed. A second run changes
nothing and reports every phase as unchanged.

--root DIR prepares a mounted machine image instead of this host: files are
written under DIR, and nothing live is touched (no module loaded, no sysctl
value set, no service restarted). --dry-run prints the plan, with a unified
diff per file (contents of files that are not world-readable are hidden),
and changes nothing.

A sealed spec (the spec followed by its SealedSecrets document, from
'machineadm seal') is opened with --identity before any phase, as
bootstrap opens it; an envelope that identity does not open refuses the
run with exit code 2 and nothing changed. No file is ever written
without the content its envelope carries.

A real run holds the lock /var/lib/machineadm/lock (under --root DIR for an
image) while it runs; a second prepare or bootstrap meanwhile does nothing,
writes nothing and exits 3. A dry run takes no lock.

Exit codes: 0 success, 1 a phase failed (its class and hint are printed),
2 invalid spec, usage, or a sealed spec this machine cannot open (nothing
was changed), 3 busy: another machineadm
run holds the lock (nothing was done).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := checkRoot(f.root)
			if err != nil {
				return err
			}
			return session.Run(cmd.Context(), session.Options{
				Command: session.Prepare, SpecFile: f.file, In: o.in, Out: o.out, Log: o.log,
				DryRun: f.dryRun, Root: root, Skip: f.skipPhases, LogFile: true, IdentityFile: f.identity,
			})
		},
	}
	c.Flags().StringVarP(&f.file, "file", "f", "", "machine spec path, or - for standard input")
	c.Flags().StringVar(&f.root, "root", "/", "root directory of the machine to prepare (an image mounted at DIR: files only, nothing live)")
	c.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the plan with a diff per file; change nothing")
	c.Flags().StringVar(&f.identity, "identity", "", "this machine's identity file for a sealed spec (mode 0600, root-owned; default /etc/machineadm/identity; under --root DIR)")
	c.Flags().StringSliceVar(&f.skipPhases, "skip-phases", nil, "phases not to run, by name: "+phaseNames(session.Workflow(session.Prepare, nil)))
	return c
}

// checkRoot requires an existing directory and returns it absolute and
// clean.
func checkRoot(root string) (string, error) {
	if root == "" {
		return "", session.Usagef("--root must not be empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", session.Usagef("--root: %v", err)
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return "", session.Usagef("--root %s: not a directory", root)
	}
	return abs, nil
}
