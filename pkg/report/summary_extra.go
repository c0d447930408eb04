package report

import "fmt"

// extras renders, for the full view, what the phase table has no room
// for: the warnings each phase recorded, the sysctl phase's desired and
// effective values, the Node a failed join left registered, and the
// compliance counts with each FAIL and WARN check (a dry run's: how many
// the real run evaluates, nothing evaluated). Every
// string was escaped by shownCopy before it reaches here.
func (s *summary) extras() []string {
	var out []string
	if s.r.NodeRegistered != "" {
		out = append(out, wrap("node:  ", fmt.Sprintf("%s is registered in the cluster; delete it (kubectl delete node %s) before retrying", s.r.NodeRegistered, s.r.NodeRegistered), s.opt.Width, 0)...)
	}
	for _, p := range s.r.Phases {
		for _, w := range p.Warnings {
			out = append(out, wrap("warning: ", p.Name+": "+w, s.opt.Width, 0)...)
		}
	}
	for _, p := range s.r.Phases {
		if len(p.Sysctl) == 0 {
			continue
		}
		out = append(out, p.Name+" (desired -> effective):")
		for _, v := range p.Sysctl {
			line := fmt.Sprintf("  %s  %s -> %s", v.Key, orDash(v.Desired), orDash(v.Effective))
			if v.ReadError != "" {
				line += "  (not read back: " + v.ReadError + ")"
			}
			if v.BootValue != "" {
				line += fmt.Sprintf("  (next boot: %s from %s)", v.BootValue, orDash(v.BootFile))
			}
			out = append(out, line)
		}
	}
	if c := s.r.Compliance; c != nil && c.DryRun {
		// Nothing was read: counts of verdicts would read as a clean node.
		waived := 0
		for _, ch := range c.Checks {
			if ch.Waiver != "" {
				waived++
			}
		}
		out = append(out, wrap("compliance: ", fmt.Sprintf("%s (%s): dry run, nothing evaluated; the real run evaluates %d checks (%d waived)",
			c.Profile, c.Benchmark, c.Counts.NotEvaluated, waived), s.opt.Width, 0)...)
	} else if c != nil {
		n := c.Counts
		out = append(out, wrap("compliance: ", fmt.Sprintf("%s (%s): %d PASS, %d FAIL (%d waived), %d WARN, %d not applicable",
			c.Profile, c.Benchmark, n.Pass, n.Fail, n.Waived, n.Warn, n.NotApplicable), s.opt.Width, 0)...)
		for _, ch := range c.Checks {
			if ch.Verdict != "FAIL" && ch.Verdict != "WARN" {
				continue
			}
			line := fmt.Sprintf("%s %s %s: %s", ch.Verdict, ch.ID, ch.Title, orDash(ch.Detail))
			if ch.Waiver != "" {
				line += " (waived: " + ch.Waiver + ")"
			}
			out = append(out, wrap("  ", line, s.opt.Width, 2)...)
		}
	}
	return out
}
