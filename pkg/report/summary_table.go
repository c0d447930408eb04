package report

import (
	"fmt"
	"strings"
	"time"
)

// statusWidth fits the longest status, "Succeeded" and "Unchanged";
// durWidth the longest duration under an hour, "59m59s".
const (
	statusWidth = 9
	durWidth    = 6
)

// tableFull lists every phase on its own line with its message.
func (s *summary) tableFull() []string {
	if len(s.r.Phases) == 0 {
		return []string{"phases: none ran"}
	}
	nameW := len("PHASE")
	for _, p := range s.r.Phases {
		nameW = max(nameW, len(p.Name))
	}
	out := []string{fmt.Sprintf("%-*s  %-*s  %8s  %s", nameW, "PHASE", statusWidth, "STATUS", "DURATION", "MESSAGE")}
	for _, p := range s.r.Phases {
		msg, _, _ := strings.Cut(p.Message, "\n")
		out = append(out, strings.TrimRight(fmt.Sprintf("%-*s  %-*s  %8s  %s", nameW, p.Name, statusWidth, p.Status, phaseDuration(p), msg), " "))
	}
	return out
}

// tableCompact lists the phases in two columns (one when the width is
// under 80) in at most maxLines lines, folding phases that did not fail
// into summary lines when they do not fit: first the skipped phases after
// the last failure, then the earliest phases before the first failure.
func (s *summary) tableCompact(maxLines int) []string {
	ph := s.r.Phases
	if len(ph) == 0 {
		return []string{"phases: none ran"}
	}
	maxLines = max(maxLines, 3)
	cols := 2
	if s.opt.Width < 80 {
		cols = 1
	}
	lines := func(pre, suf int) int {
		n := 1 + (len(ph)-pre-suf+cols-1)/cols
		if pre > 0 {
			n++
		}
		if suf > 0 {
			n++
		}
		return n
	}
	// Foldable: trailing skipped phases, and phases before the first failure.
	suffixMax := 0
	for i := len(ph) - 1; i >= 0 && ph[i].Status == PhaseSkipped; i-- {
		suffixMax++
	}
	prefixMax := 0
	for prefixMax < len(ph)-suffixMax && ph[prefixMax].Status != PhaseFailed {
		prefixMax++
	}
	if s.r.Result == ResultSucceeded {
		// Keep the last phases of a success in view.
		prefixMax = max(0, len(ph)-suffixMax-1)
	}
	pre, suf := 0, 0
	if lines(pre, suf) > maxLines {
		suf = suffixMax
	}
	for lines(pre, suf) > maxLines && pre < prefixMax {
		pre++
	}
	var out []string
	if pre > 0 {
		out = append(out, fold(ph[:pre], "earlier"))
	}
	out = append(out, s.columns(ph[pre:len(ph)-suf], cols)...)
	if suf > 0 {
		out = append(out, fold(ph[len(ph)-suf:], "later"))
	}
	return out
}

// columns lays phases out column by column, under a header.
func (s *summary) columns(ph []Phase, cols int) []string {
	const sep = " | "
	colW := (s.opt.Width - len(sep)*(cols-1)) / cols
	nameW := colW - statusWidth - durWidth - 2
	cell := func(name, status, dur string) string {
		return fmt.Sprintf("%-*s %-*s %*s", nameW, fitName(name, nameW), statusWidth, status, durWidth, dur)
	}
	rows := (len(ph) + cols - 1) / cols
	head := make([]string, min(cols, len(ph)))
	for i := range head {
		head[i] = cell("PHASE", "STATUS", "TIME")
	}
	out := []string{strings.Join(head, sep)}
	for row := range rows {
		var cells []string
		for c := range cols {
			i := c*rows + row
			if i < len(ph) {
				cells = append(cells, cell(ph[i].Name, string(ph[i].Status), phaseDuration(ph[i])))
			}
		}
		out = append(out, strings.TrimRight(strings.Join(cells, sep), " "))
	}
	return out
}

// fold summarises phases in one line: "... 9 earlier phases: 8
// Succeeded, 1 Unchanged (12.3s)".
func fold(ph []Phase, which string) string {
	counts := map[PhaseStatus]int{}
	var total time.Duration
	for _, p := range ph {
		counts[p.Status]++
		total += time.Duration(p.DurationMs) * time.Millisecond
	}
	var parts []string
	for _, st := range []PhaseStatus{PhaseSucceeded, PhaseUnchanged, PhaseSkipped, PhaseFailed} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	return fmt.Sprintf("... %d %s phases: %s (%s)", len(ph), which, strings.Join(parts, ", "), duration(total))
}

func phaseDuration(p Phase) string {
	if p.Status == PhaseSkipped && p.DurationMs == 0 {
		return "-"
	}
	return duration(time.Duration(p.DurationMs) * time.Millisecond)
}

// fitName cuts a phase name to width, keeping a sub-phase's own name
// whole: "control-plane-join/mark-control-plane" → "control-p.../mark-control-plane".
func fitName(name string, width int) string {
	if len(name) <= width {
		return name
	}
	parent, child, ok := strings.Cut(name, "/")
	if room := width - len(child) - len(".../"); ok && room >= 4 {
		return parent[:room] + ".../" + child
	}
	return fit(name, width)
}
