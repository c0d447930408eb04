package report

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/machineadm/machineadm/pkg/printable"
)

// Screen is the size of the one-screen summary: 24 lines of 100 columns,
// what a serial console or a cloud provider's console screenshot shows.
const (
	ScreenWidth  = 100
	ScreenHeight = 24
)

// SummaryOptions shape the human summary of a report.
type SummaryOptions struct {
	// Width is the longest line, in characters. Default ScreenWidth.
	Width int
	// Height is the most lines. 0 means no limit: the full view, with one
	// phase per line and its message, the whole error, hint and log tail.
	Height int
	// ReportPath, when set, is named in the last line as where the full
	// report is.
	ReportPath string
	// Footer, when set, replaces that last line.
	Footer string
}

// OneScreen are the options of the one-screen summary (stdout, console).
func OneScreen(reportPath string) SummaryOptions {
	return SummaryOptions{Width: ScreenWidth, Height: ScreenHeight, ReportPath: reportPath}
}

// Summary renders r for a person. With a Height it fits in Height lines
// of Width characters: the header (result, machine, times), the phase
// table in two columns (the earliest phases that did not fail folded into
// one line when they do not fit), the failure (error, class, hint) and as
// much of the log tail as the remaining lines hold. Only ASCII is used
// besides what the report's strings contain, for serial consoles. Every
// one of those strings is shown through printable.Show (shownCopy): names
// (host, node, phase, class, version) as printable ASCII without spaces,
// log lines and paths as one line each, errors, hints and messages as
// text whose continuation lines are indented. So no string of a report
// file, whatever it holds (a line feed, a carriage return, an escape
// sequence, a bidirectional control, U+2028), starts a line of its own or
// rewrites one: the result line ("machineadm bootstrap: Succeeded") is
// always the first, and no other line reads like it.
func Summary(r *BootstrapReport, opt SummaryOptions) string {
	if opt.Width <= 0 {
		opt.Width = ScreenWidth
	}
	opt.ReportPath = printable.Show(opt.ReportPath, printable.Line)
	opt.Footer = printable.Show(opt.Footer, printable.Line)
	s := &summary{r: shownCopy(r), opt: opt}
	return s.render()
}

type summary struct {
	r   *BootstrapReport
	opt SummaryOptions
}

func (s *summary) render() string {
	var head, table, failure, tail, foot []string
	head = s.header()
	switch {
	case s.opt.Footer != "":
		foot = []string{s.opt.Footer}
	case s.opt.ReportPath != "":
		// A long path (a dry run's directory) is named once rather than cut.
		line := "full report: " + s.opt.ReportPath + "  (machineadm report " + s.opt.ReportPath + ")"
		if s.opt.Height > 0 && len([]rune(line)) > s.opt.Width {
			line = "full report: " + s.opt.ReportPath
		}
		foot = []string{line}
	}
	if s.opt.Height <= 0 {
		if s.r.Result == ResultFailed {
			failure = s.failure(0)
		}
		table = append(s.tableFull(), s.extras()...)
		if s.r.Result == ResultFailed || len(s.r.LogTail) > 0 {
			tail = s.tail(len(s.r.LogTail))
		}
	} else {
		if s.r.Result == ResultFailed {
			failure = s.failure(3)
		}
		fixed := len(head) + len(failure) + len(foot)
		// Keep room for the tail's title and a few of its lines.
		reserve := 0
		if len(s.r.LogTail) > 0 {
			reserve = 1 + min(3, len(s.r.LogTail))
		}
		table = s.tableCompact(s.opt.Height - fixed - reserve)
		left := s.opt.Height - fixed - len(table)
		if s.r.Result == ResultFailed && len(s.r.LogTail) == 0 && left > 1 {
			// Nothing to show of the output (an invalid spec): the error,
			// a list of problems, may take the room.
			failure = s.failure(3 + left - 1)
			left = s.opt.Height - len(head) - len(failure) - len(foot) - len(table)
		}
		switch {
		case left >= 2 && len(s.r.LogTail) > 0:
			tail = s.tail(left - 1)
		case left >= 1 && s.r.Result == ResultFailed:
			tail = s.tail(0)
		}
	}
	var lines []string
	for _, part := range [][]string{head, table, failure, tail, foot} {
		lines = append(lines, part...)
	}
	if s.opt.Height > 0 && len(lines) > s.opt.Height {
		lines = lines[:s.opt.Height]
	}
	if s.opt.Height > 0 {
		for i, l := range lines {
			lines[i] = fit(l, s.opt.Width)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func (s *summary) header() []string {
	r := s.r
	title := fmt.Sprintf("machineadm %s: %s", orDash(r.Command), r.Result)
	if r.Result == ResultFailed {
		title = fmt.Sprintf("machineadm %s FAILED", orDash(r.Command))
		if r.FailedPhase != "" {
			title += " in phase " + r.FailedPhase
		}
		title += ": " + string(r.ErrorClass)
	}
	m := r.Machine
	var id []string
	id = append(id, "host "+orDash(m.Hostname))
	if m.NodeName != "" && m.NodeName != m.Hostname {
		id = append(id, "node "+m.NodeName)
	}
	if m.SpecName != "" {
		id = append(id, "spec "+m.SpecName)
	}
	if m.Role != "" || m.Action != "" {
		id = append(id, orDash(m.Role)+" "+orDash(m.Action))
	}
	if r.ResumedFrom != "" {
		id = append(id, "resumed at "+r.ResumedFrom)
	}
	run := []string{"machineadm " + orDash(m.MachineadmVersion)}
	switch {
	case r.Upgrade != nil && r.Upgrade.FromVersion != r.Upgrade.ToVersion:
		run = append(run, "kubernetes "+orDash(r.Upgrade.FromVersion)+" -> "+orDash(r.Upgrade.ToVersion))
	case m.KubernetesVersion != "":
		run = append(run, "kubernetes "+m.KubernetesVersion)
	}
	run = append(run, "started "+stamp(r.StartTime), "took "+duration(r.Duration()))
	return []string{title, strings.Join(id, "  "), strings.Join(run, "  ")}
}

// failure renders the error (at most maxErr lines, 0 for all) and the
// hint (at most 2 lines, all when maxErr is 0).
func (s *summary) failure(maxErr int) []string {
	maxHint := 2
	if maxErr <= 0 {
		maxHint = 0
	}
	out := wrap("error: ", s.r.Error, s.opt.Width, maxErr)
	return append(out, wrap("hint:  ", s.r.Hint, s.opt.Width, maxHint)...)
}

func (s *summary) tail(n int) []string {
	t := s.r.LogTail
	if len(t) == 0 {
		return []string{"log tail: (no output recorded)"}
	}
	if n > len(t) {
		n = len(t)
	}
	out := []string{fmt.Sprintf("log tail (last %d of %d lines):", n, len(t))}
	for _, l := range t[len(t)-n:] {
		if s.opt.Height > 0 {
			l = klogHeader.ReplaceAllString(l, "")
		}
		l = "  " + expandTabs(l)
		if s.opt.Height > 0 {
			l = fitMiddle(l, s.opt.Width)
		}
		out = append(out, l)
	}
	return out
}

// klogHeader is the prefix of a klog line, "I0314 09:30:00.000000    4242
// token.go:200] ", which the one-screen summary drops to show more of the
// message.
var klogHeader = regexp.MustCompile(`^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [^\] ]+\] `)

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// duration formats d for a person: "850ms", "12.3s", "4m05s".
func duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// fit cuts s to width characters, ending in "..." when cut.
func fit(s string, width int) string {
	rs := []rune(s)
	if len(rs) <= width {
		return s
	}
	if width <= 3 {
		return string(rs[:width])
	}
	return string(rs[:width-3]) + "..."
}

// fitMiddle cuts s to width characters by dropping its middle, keeping
// the start (what the line is about) and the end (a log line's cause).
func fitMiddle(s string, width int) string {
	rs := []rune(s)
	if len(rs) <= width || width < 20 {
		return fit(s, width)
	}
	head := (width - 3) * 2 / 5
	return string(rs[:head]) + "..." + string(rs[len(rs)-(width-3-head):])
}

// wrap breaks text into lines of at most width characters, the first
// starting with prefix and the others indented as deep; the text's own
// line breaks are kept, and a word longer than a line (a URL) is broken.
// max > 0 keeps at most max lines: the first, then "..." and the last
// max-1, because a Go error ends with its root cause. It runs in time
// linear in len(text): each rune is counted and copied once.
func wrap(prefix, text string, width, max int) []string {
	indent := strings.Repeat(" ", len(prefix))
	room := width - len(indent)
	var lines []string
	var cur strings.Builder
	cur.WriteString(prefix)
	curLen := utf8.RuneCountInString(prefix)
	flush := func() {
		lines = append(lines, cur.String())
		cur.Reset()
		cur.WriteString(indent)
		curLen = len(indent)
	}
	for i, para := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if i > 0 {
			flush()
		}
		empty := true
		for _, w := range strings.Fields(para) {
			wl := utf8.RuneCountInString(w)
			if !empty && curLen+1+wl > width {
				flush()
				empty = true
			}
			if !empty {
				cur.WriteByte(' ')
				curLen++
			}
			for room > 0 && curLen+wl > width {
				n := width - curLen // runes that still fit on this line
				off := runeOffset(w, n)
				cur.WriteString(w[:off])
				flush()
				w, wl = w[off:], wl-n
			}
			cur.WriteString(w)
			curLen += wl
			empty = false
		}
	}
	lines = append(lines, cur.String())
	if max > 0 && len(lines) > max {
		kept := append([]string{lines[0]}, lines[len(lines)-(max-1):]...)
		if max > 1 && len(indent) >= 4 {
			kept[1] = indent[:len(indent)-4] + "... " + kept[1][len(indent):]
		}
		lines = kept
	}
	return lines
}

// runeOffset is the byte offset of the n-th rune of s (len(s) when s has
// fewer).
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

func expandTabs(s string) string { return strings.ReplaceAll(s, "\t", "    ") }
