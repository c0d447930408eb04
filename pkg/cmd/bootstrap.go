package cmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/session"
)

// bootstrapFlags are the flags of `bootstrap` and `bootstrap phase`.
type bootstrapFlags struct {
	file       string
	dryRun     bool
	dryRunDir  string
	skipPhases []string
	// reportRoot and workDir are hidden, for tests: the root under which
	// the report writers write, and the state directory.
	reportRoot string
	workDir    string
	identity   string
	verbose    bool
}

func (f *bootstrapFlags) bind(c *cobra.Command, withSkip bool) {
	c.Flags().StringVarP(&f.file, "file", "f", "", "machine spec path, or - for standard input")
	c.Flags().BoolVar(&f.dryRun, "dry-run", false, "change nothing: print a plan (each phase and what it would change); kubeadm runs in its dry-run mode and writes its files to --dry-run-dir; failing inputs fail the dry run (exit 1) as they would fail the real run")
	c.Flags().StringVar(&f.dryRunDir, "dry-run-dir", "", "directory for a dry run's files: a new or empty directory, or an earlier dry run's, whose plan it replaces (default: a new temporary directory, printed at the end)")
	if withSkip {
		c.Flags().StringSliceVar(&f.skipPhases, "skip-phases", nil, "phases not to run, by full name: a parent (addon) skips its sub-phases (addon/coredns, addon/kube-proxy); list them with 'machineadm bootstrap phase -f SPEC'")
	}
	c.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "also print the full output of kubeadm on standard output (it always goes to the log file and the report's log tail)")
	c.Flags().StringVar(&f.identity, "identity", "", "this machine's identity file for a sealed spec (mode 0600, root-owned; default /etc/machineadm/identity)")
	c.Flags().StringVar(&f.reportRoot, "report-root", "/", "root directory under which the outcome report, the sentinel and the console device are written")
	c.Flags().StringVar(&f.workDir, "work-dir", "", "machineadm's state directory (state file, kubeadm configuration, patches); default /var/lib/machineadm")
	_ = c.Flags().MarkHidden("report-root")
	_ = c.Flags().MarkHidden("work-dir")
}

func (f *bootstrapFlags) options(o *options, c *cobra.Command, only string) session.Options {
	return session.Options{
		Command: session.Bootstrap, SpecFile: f.file, In: o.in, Out: o.out, Log: o.log,
		DryRun: f.dryRun, DryRunDir: f.dryRunDir, DryRunDirSet: c.Flags().Changed("dry-run-dir"),
		ReportRoot: f.reportRoot, WorkDir: f.workDir, Skip: f.skipPhases, Only: only, IdentityFile: f.identity,
		Verbose: f.verbose, LogFile: true,
	}
}

func newBootstrapCommand(o *options) *cobra.Command {
	f := &bootstrapFlags{}
	c := &cobra.Command{
		Use:   "bootstrap -f SPEC",
		Short: "Prepare this host and create or join a cluster with the embedded kubeadm",
		Long: `Runs the bootstrap workflow for the machine spec: inputs-check (the spec's
secret files and CA set are read and checked before anything changes), the
host preparation phases, machineadm's kubeadm-config phase, then kubeadm's
init phases (action Init) or join phases (action Join) in-process, each under
kubeadm's own name with its sub-phases (certs/apiserver, addon/kube-proxy,
...), and last the extra static pods. --skip-phases takes full names: a
parent skips its sub-phases; a run that skipped phases is not recorded as
finished, so a later run without --skip-phases runs just those. A failure
names the sub-phase that failed.
A spec sealed with 'machineadm seal' (the spec followed by its
SealedSecrets document) is opened with --identity before any phase runs
(a whole run, one phase, a resumed run); an identity that does not open
it refuses the run (VerificationFailed in the report, exit code 2) with
nothing changed. Running again after success changes nothing, once a
read-only look at the host bears the state file out (kubelet.conf, the
kubelet's configuration, the spec's files; otherwise the run converges
again); running again after an interrupted run resumes at the first phase
that did not finish. On a node that runs another spec (its applied-spec
record, written by a finished bootstrap or upgrade), a bootstrap is refused
with exit code 2: apply a changed spec with 'machineadm upgrade'.

The console shows one line a phase and a summary; kubeadm's own output goes
to the log file (` + session.LogFileName + ` beside the report) and the report's
log tail, and with -v to the console as well.

--dry-run changes nothing and prints a plan: each phase with what it would
change — host files and settings, the files kubeadm would write (by their
host paths), the API objects it would create (by kind and name). kubeadm's
files go to --dry-run-dir: DIR/kubeadm, with the certificates in DIR/pki,
where the manifests and kubeconfig files it writes point; with
spec.controlPlane.runtime Systemd the unit and environment files go to
DIR/systemd, by their machine paths. DIR is new, empty,
or an earlier dry run's (marked by DIR/.machineadm-dry-run), whose files
are replaced, so a repeated dry run plans the same ('bootstrap phase NAME
--dry-run' builds on them instead); a directory with other files is refused
(exit 2) with nothing written. A dry run reads
the same inputs as a real run: a missing secret file or CA set fails it in
inputs-check, naming the field, with exit code 1. A join's dry run
discovers a stand-in cluster-info served on 127.0.0.1, made for the spec's
token and CA (spec.controlPlane.pki.dir's, or one made for the dry run), so
a token of any ID passes and a CA hash that does not pin that CA fails.

One run at a time: a real run (not --dry-run) holds the lock
/var/lib/machineadm/lock while it runs; a second bootstrap or
prepare meanwhile does nothing, writes nothing and exits 3, naming the
holder's process ID and command.

Exit codes: 0 success, 1 the bootstrap failed (see the report), 2 invalid spec,
usage, or a sealed spec this machine cannot open (nothing was changed), 3 busy: another machineadm run holds the lock
(nothing was done).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return session.Run(cmd.Context(), f.options(o, cmd, ""))
		},
	}
	f.bind(c, true)
	c.AddCommand(newBootstrapPhaseCommand(o))
	return c
}

func newBootstrapPhaseCommand(o *options) *cobra.Command {
	f := &bootstrapFlags{}
	c := &cobra.Command{
		Use:   "phase [NAME] -f SPEC",
		Short: "Run one bootstrap phase alone, or print the phase tree of a spec",
		Long: `Without NAME, prints the tree of phases the spec's bootstrap runs, in order,
sub-phases indented under their parents. With NAME (a full name such as
control-plane/apiserver, or a parent such as certs), runs just that phase and
its sub-phases; kubeadm phases prepare the kubeadm configuration first. The
state file is neither consulted nor completed. It takes the same lock as
bootstrap. A sealed spec is opened with --identity first, as bootstrap
opens it, or refused (exit code 2) with nothing changed.

Exit codes: 0 success, 1 the phase failed (see the report), 2 invalid spec,
usage, or a sealed spec this machine cannot open (nothing was changed),
3 busy: another machineadm run holds the lock
(nothing was done).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return session.Usagef("at most one phase name, got %q", args)
			}
			if len(args) == 1 && strings.TrimSpace(args[0]) == "" {
				// An empty NAME must not mean "every phase": that would be
				// a whole bootstrap run by a command that runs one phase.
				return session.Usagef("the phase name is empty; 'machineadm bootstrap phase -f SPEC' lists the phases")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				l, err := session.LoadSpec(o.in, o.log, f.file)
				if err != nil {
					return err
				}
				session.Workflow(session.Bootstrap, l.Config).Print(o.out)
				return nil
			}
			return session.Run(cmd.Context(), f.options(o, cmd, args[0]))
		},
	}
	f.bind(c, false)
	return c
}
