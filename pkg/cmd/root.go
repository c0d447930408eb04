// Package cmd builds machineadm's command tree (cobra) and maps errors to
// exit codes with session.ExitCode: 0 success, 1 the bootstrap (or another
// action) ran and failed, 2 bad input (usage or an invalid spec) with
// nothing changed, 3 another bootstrap or prepare holds the run lock,
// nothing done. It parses flags and prints; a run is pkg/session's, the
// config commands' work is pkg/cmd/configcmd's, and it imports no host or
// phases package (internal/fences, docs/architecture.md).
package cmd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/heapprof"
	"github.com/machineadm/machineadm/pkg/printable"
	"github.com/machineadm/machineadm/pkg/session"
)

// options are shared by all commands.
type options struct {
	in       io.Reader
	out      io.Writer
	errOut   io.Writer
	logLevel string
	log      *slog.Logger
}

// NewRootCommand builds the machineadm command tree writing to out and
// errOut and reading standard input from in.
func NewRootCommand(in io.Reader, out, errOut io.Writer) *cobra.Command {
	o := &options{in: in, out: out, errOut: errOut}
	root := &cobra.Command{
		Use:   "machineadm",
		Short: "Prepare a host and bootstrap it into a Kubernetes cluster from one machine spec",
		Long: `machineadm runs on the machine that is becoming a Kubernetes node. It reads one
versioned machine spec (machineadm.io/v1alpha1 MachineBootstrapConfig),
prepares the host, runs the kubeadm compiled into it to create or join a
cluster, and writes a structured outcome report.

Standard output is for people: progress lines, plans and summaries;
warnings and errors go to standard error. The structured log goes to the
log file of bootstrap and prepare (` + session.LogFileName + ` beside the outcome
report, with kubeadm's full output), or to standard error with --log-level.

Exit codes: 0 success; 1 the run failed (see the report); 2 bad input
(usage or an invalid spec) and nothing on the host was changed; 3 (bootstrap,
prepare) another machineadm run holds the lock on this host, nothing was done.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			var err error
			o.log, err = session.StderrLogger(o.errOut, o.logLevel)
			return err
		},
	}
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	root.PersistentFlags().StringVar(&o.logLevel, "log-level", "", "print machineadm's structured log on standard error from this level: debug, info, warn or error (default: only warnings and errors, for a person; bootstrap and prepare always write the full log to "+session.LogFileName+" beside the outcome report)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &session.UsageError{Err: err} })

	root.AddCommand(
		newVersionCommand(o),
		newConfigCommand(o),
		newPKICommand(o),
		newCertsCommand(o),
		newTokenCommand(o),
		newBootstrapCommand(o),
		newPrepareCommand(o),
		newUpgradeCommand(o),
		newRenderCommand(o),
		newReportCommand(o),
		newKubeletServiceCommand(o),
		newKeygenCommand(o), newSealCommand(o), newUnsealCommand(o),
	)
	strictHelp(root)
	root.InitDefaultCompletionCmd()
	strictGroups(root)
	return root
}

// strictGroups makes every command that only groups others (config, pki,
// token, completion) refuse an argument that names none of its commands
// with a usage error (exit 2): cobra shows such a command's help and exits
// 0, so a script's 'machineadm pki inti' passed. Without arguments it
// still shows its help (exit 0), as the root command does.
func strictGroups(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c == root || !c.HasSubCommands() || c.Runnable() {
			return
		}
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return session.Usagef("unknown command %q for %q; '%s --help' lists its commands", args[0], cmd.CommandPath(), cmd.CommandPath())
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	walk(root)
}

// Execute runs machineadm with args and returns the exit code; errors are
// printed to errOut.
func Execute(args []string, in io.Reader, out, errOut io.Writer) int {
	setGCPercent()
	// A debugging aid, off unless its environment variable names a file
	// (docs/design.md, "Memory").
	defer heapprof.Start(errOut).Stop()
	root := NewRootCommand(in, out, errOut)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err != nil {
		if isCobraUsage(err) {
			err = &session.UsageError{Err: err}
		}
		// An error may quote the command line, a path or a file's content:
		// shown to a person, never raw (printable.Show, as text), and
		// each continuation line indented, so that a line feed in a
		// path or a value cannot start a line of its own that reads like
		// machineadm's ("machineadm bootstrap: Succeeded").
		fmt.Fprintf(errOut, "Error: %s\n", indentContinuation(printable.Show(err.Error(), printable.Text)))
		// A usage error that carries its own hint (errclass) says what to
		// do; --help would not.
		var ue *session.UsageError
		if _, hint := errclass.Of(err); errors.As(err, &ue) && cmd != nil && hint == "" {
			fmt.Fprintf(errOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
	}
	return session.ExitCode(err)
}

// indentContinuation indents by two spaces each line of s after the first
// that does not already start with a space; empty lines stay empty. The
// validation errors' own lines ("  spec.node: ...") are unchanged.
func indentContinuation(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" && lines[i][0] != ' ' {
			lines[i] = "  " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// isCobraUsage recognises cobra's own errors for unknown commands and bad
// argument counts, which it does not type.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, s := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// shown is s (a path, a name from the command line) as one line for a
// person (printable.Show as a Line): control characters, a line feed
// included, and invisible characters escaped, so that it can neither act
// on the terminal nor begin a line of its own (in `config defaults`, a
// line of the YAML it prints).
func shown(s string) string {
	return printable.Show(s, printable.Line)
}

// strictHelp makes cobra's help command refuse an unknown topic with a
// usage error (exit 2): cobra prints "Unknown help topic" and exits 0, so
// a script's 'machineadm help bootstarp' would pass. Known topics and the
// help command's shell completion stay cobra's own.
func strictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() != "help" || c.Run == nil {
			continue
		}
		show := c.Run
		c.Run = nil
		c.RunE = func(c *cobra.Command, args []string) error {
			if target, rest, err := c.Root().Find(args); target == nil || err != nil || len(rest) > 0 {
				return session.Usagef("unknown help topic %q; 'machineadm --help' lists the commands", strings.Join(args, " "))
			}
			show(c, args)
			return nil
		}
	}
}

// noArgs rejects positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return session.Usagef("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// phaseNames lists a workflow's phase names for help text.
func phaseNames(w interface{ Names() []string }) string { return strings.Join(w.Names(), ", ") }
