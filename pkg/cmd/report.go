package cmd

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/report"
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

Text that a terminal would interpret (escape sequences, other control
characters, bidirectional overrides, invalid UTF-8) is shown escaped, as
\x1b or \u202e: a report file may hold whatever kubeadm or a log printed.

PATH defaults to ` + report.DefaultPath + ` (spec.report.path's
default); --previous shows the report the last one replaced.

Exit codes: 0 the report was shown (whatever its result), 2 the file is
missing, unreadable or not a valid report.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("at most one report path, got %q", args)
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
				return usagef("--output must be text or json, got %q", output)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return usagef("reading the outcome report: %s", terminalSafe(err.Error()))
			}
			r, err := report.Decode(data)
			if err != nil {
				// The error may quote the file's bytes (a phase name, a
				// field value): never hand them to the terminal raw.
				return usagef("%s: %s", terminalSafe(path), terminalSafe(err.Error()))
			}
			if output == "json" {
				data, err := r.Marshal()
				if err != nil {
					return err
				}
				_, err = o.out.Write(data)
				return err
			}
			sanitizeStrings(reflect.ValueOf(r).Elem())
			opt := report.OneScreen("")
			opt.Footer = "more: machineadm report --full " + terminalSafe(path)
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

// terminalSafe returns s with everything a terminal would act on instead
// of showing written as a Go escape: C0 control characters except the
// line feed (ESC as \x1b, CR as \x0d), DEL, C1 control characters
// (U+0080-U+009F, which some terminals take as CSI and OSC), Unicode
// bidirectional controls (U+202E as \u202e) and bytes that are not UTF-8.
// A tab becomes a space so that columns stay aligned.
func terminalSafe(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteByte(' ')
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports a rune that terminalSafe escapes (or, for a tab,
// replaces).
func unsafeRune(r rune) bool {
	return r != '\n' && (r < 0x20 || (r >= 0x7f && r <= 0x9f) || unicode.Is(unicode.Bidi_Control, r))
}

// sanitizeStrings applies terminalSafe to every string reachable from v
// (struct fields, slice items, named string types such as the result and
// error class), in place, so that a report's person view shows no raw
// control characters whichever field carries them.
func sanitizeStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(terminalSafe(v.String()))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				sanitizeStrings(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			sanitizeStrings(v.Index(i))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			sanitizeStrings(v.Elem())
		}
	}
}
