package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/report"
	"github.com/machineadm/machineadm/pkg/session"
)

func newReportCommand(o *options) *cobra.Command {
	var output string
	var full, previous bool
	c := &cobra.Command{
		Use:   "report [PATH]",
		Short: "Show the outcome report of the last bootstrap or prepare for a person",
		Long: `Reads an outcome report (machineadm.io/v1alpha1 BootstrapReport, JSON) and
shows it for a person: the result, the machine, the phase table with
durations, and for a failure the failed phase, the error class, a hint and the
last lines of kubeadm's output. The view fits one screen (24 lines of 100
columns); --full shows every phase with its message and the whole log tail.
--output json prints the report document itself. The error classes are
described in docs/report.md.

A report file may hold whatever kubeadm or a log printed, or whatever
someone wrote into it, so its strings are shown escaped as Go escapes:
names (host, node and phase names, classes, versions) as printable ASCII
without spaces (a line feed as \x0a, a Cyrillic letter as \u043e);
messages, hints, errors and log lines with every control, invisible or
line-breaking character escaped (\x1b, \x0d, \u202e, \u200b, \u2028).
A line feed in an error or hint starts an indented line. No string of
the file can start a line that reads like the result line. --output json
writes such characters as JSON escapes (\u001b, \u009b, \u202e).

The file must be one JSON object: unknown fields, a key given twice in
any object and data after the object are refused (exit code 2).

PATH defaults to ` + report.DefaultPath + ` (spec.report.path's
default); --previous shows the report the last one replaced.

PATH must be a regular file of at most 4 MiB (a FIFO or a device is
refused without waiting).

Exit codes: 0 the report was shown (whatever its result), 2 the file is
missing, unreadable, too large or not a valid report.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return session.Usagef("at most one report path, got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			path := report.DefaultPath
			if len(args) == 1 {
				path = args[0]
			}
			if previous {
				path = report.PreviousPath(path)
			}
			if output != "text" && output != "json" {
				return session.Usagef("--output must be text or json, got %q", output)
			}
			// Bounded: a regular file of at most report.MaxReportSize
			// bytes; /dev/zero or a FIFO is refused at once.
			r, err := report.ReadFile(path)
			if err != nil {
				// The error may quote the file's bytes (a phase name, a
				// field value): Execute shows it through
				// printable.Show, as every error.
				return session.Usagef("%s: %v", path, err)
			}
			if output == "json" {
				data, err := r.Marshal()
				if err != nil {
					return err
				}
				// JSON escapes C0 controls itself, not DEL, C1 or bidi
				// controls: those are escaped the JSON way too.
				_, err = o.out.Write(report.TerminalSafeJSON(data))
				return err
			}
			opt := report.OneScreen("")
			opt.Footer = "more: machineadm report --full " + path // Summary escapes it
			if full {
				opt = report.SummaryOptions{Width: report.ScreenWidth}
			}
			_, err = fmt.Fprint(o.out, report.Summary(r, opt))
			return err
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "text", "output format: text (for a person) or json (the report document)")
	c.Flags().BoolVar(&full, "full", false, "show every phase with its message and the whole log tail, not one screen")
	c.Flags().BoolVar(&previous, "previous", false, "show the previous report (report.previous.json beside PATH)")
	return c
}
