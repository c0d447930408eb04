package doctest

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/machineadm/machineadm/pkg/render/quote"
)

// Block is one fenced code block of a Markdown file, with what its
// doc-test marker says about it.
type Block struct {
	// Info is the fence's info string ("sh", "text", "" ...).
	Info string
	// File and Line locate the opening fence (Line is 1-based).
	File string
	Line int
	// Section is the text of the nearest heading above the block ("" before
	// the first heading).
	Section string
	// Lines are the block's lines, the fence's indentation removed.
	Lines []string
	// Skip is the reason given by a `<!-- doc-test: skip (REASON) -->`
	// marker on the last non-blank line before the fence; "" runs the block.
	Skip string
}

// shellInfo are the fence info strings that make a block a shell block.
var shellInfo = map[string]bool{"sh": true, "bash": true, "shell": true}

var (
	markerRe = regexp.MustCompile(`^<!--\s*doc-test:\s*(.*?)\s*-->$`)
	skipRe   = regexp.MustCompile(`^skip\s*\((.+)\)$`)
	// expectRe is a command line's trailing `# expect: exit N` comment.
	expectRe  = regexp.MustCompile(`\s#\s*expect:\s*exit\s+([0-9]+)\s*$`)
	headingRe = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// IsShell reports whether the block is a shell block (```sh, ```bash or
// ```shell), the kind the doc test runs.
func (b Block) IsShell() bool {
	lang, _, _ := strings.Cut(b.Info, " ")
	return shellInfo[lang]
}

// ReadBlocks returns the fenced code blocks of the Markdown file at path,
// in order. A doc-test marker that does not precede a shell block, an unknown
// marker, a skip without a reason and an unterminated fence are errors
// naming the file and line.
func ReadBlocks(path string) ([]Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseBlocks(path, string(data))
}

// ParseBlocks is ReadBlocks over text already read; name is used in errors
// and Block.File.
func ParseBlocks(name, text string) ([]Block, error) {
	lines := strings.Split(text, "\n")
	var (
		blocks  []Block
		section string
		// pending is the marker on the last non-blank line, and its line.
		pending     string
		pendingLine int
	)
	for i := 0; i < len(lines); i++ {
		raw := lines[i]
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" {
			continue
		}
		if m := markerRe.FindStringSubmatch(trimmed); m != nil {
			if pending != "" {
				return nil, fmt.Errorf("%s:%d: doc-test marker not followed by a shell block", name, pendingLine)
			}
			pending, pendingLine = m[1], i+1
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			indent := raw[:len(raw)-len(strings.TrimLeft(raw, " "))]
			info := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			start := i
			var body []string
			closed := false
			for i++; i < len(lines); i++ {
				if strings.TrimSpace(lines[i]) == "```" {
					closed = true
					break
				}
				body = append(body, strings.TrimPrefix(lines[i], indent))
			}
			if !closed {
				return nil, fmt.Errorf("%s:%d: code block never closed", name, start+1)
			}
			b := Block{Info: info, File: name, Line: start + 1, Section: section, Lines: body}
			if !b.IsShell() {
				if pending != "" {
					return nil, fmt.Errorf("%s:%d: doc-test marker before a %q block, not a shell block", name, pendingLine, info)
				}
				blocks = append(blocks, b)
				continue
			}
			if pending != "" {
				m := skipRe.FindStringSubmatch(pending)
				if m == nil || strings.TrimSpace(m[1]) == "" {
					return nil, fmt.Errorf("%s:%d: unknown doc-test marker %q (want `skip (REASON)`)", name, pendingLine, pending)
				}
				b.Skip = strings.TrimSpace(m[1])
				pending = ""
			}
			blocks = append(blocks, b)
			continue
		}
		if pending != "" {
			return nil, fmt.Errorf("%s:%d: doc-test marker not followed by a shell block", name, pendingLine)
		}
		if m := headingRe.FindStringSubmatch(raw); m != nil {
			section = m[1]
		}
	}
	if pending != "" {
		return nil, fmt.Errorf("%s:%d: doc-test marker not followed by a shell block", name, pendingLine)
	}
	return blocks, nil
}

// Select returns the blocks for which keep is true, in order.
func Select(blocks []Block, keep func(Block) bool) []Block {
	var out []Block
	for _, b := range blocks {
		if keep(b) {
			out = append(out, b)
		}
	}
	return out
}

// Script turns blocks into one POSIX sh script run as a single session, as
// a reader would type them one after the other: working directory and
// variables carry over. Under `set -e` any failing command stops the
// script, except a line ending in `# expect: exit N` (outside a
// here-document, whose lines are data), which must exit with N: that line
// runs on its own and a different status stops the script with a message
// naming the file and line. Each block is announced on
// standard error ("doc-test: FILE:LINE") so a failure's output shows
// where it came from.
func Script(blocks []Block) (string, error) {
	var sb strings.Builder
	sb.WriteString("set -e\n")
	for _, b := range blocks {
		fmt.Fprintf(&sb, "echo %s >&2\n", quote.Sh(fmt.Sprintf("doc-test: %s:%d", b.File, b.Line)))
		heredoc := ""
		continued := false
		for j, l := range b.Lines {
			at := fmt.Sprintf("%s:%d", b.File, b.Line+1+j)
			m := expectRe.FindStringSubmatchIndex(l)
			if m != nil && heredoc == "" && !continued {
				want, err := strconv.Atoi(l[m[2]:m[3]])
				if err != nil || want > 255 {
					return "", fmt.Errorf("%s: bad expected exit status %q", at, l[m[2]:m[3]])
				}
				if strings.HasSuffix(strings.TrimSpace(l[:m[0]]), "\\") || strings.Contains(l[:m[0]], "<<") {
					return "", fmt.Errorf("%s: `# expect: exit N` needs a command on one line", at)
				}
				fmt.Fprintf(&sb, "doctest_rc=0\n{\n%s\n} || doctest_rc=$?\n", l[:m[0]])
				fmt.Fprintf(&sb, "if [ \"$doctest_rc\" != %d ]; then echo %s\"$doctest_rc\" >&2; exit 1; fi\n",
					want, quote.Sh(fmt.Sprintf("doc-test: %s: want exit %d, got ", at, want)))
				continue
			}
			if m != nil && heredoc == "" {
				return "", fmt.Errorf("%s: `# expect: exit N` on a continued command", at)
			}
			sb.WriteString(l)
			sb.WriteByte('\n')
			switch {
			case heredoc != "":
				if strings.TrimLeft(l, "\t") == heredoc {
					heredoc = ""
				}
			default:
				if d := heredocDelim(l); d != "" {
					heredoc = d
				}
				continued = strings.HasSuffix(l, "\\")
			}
		}
		if heredoc != "" {
			return "", fmt.Errorf("%s:%d: here-document %q not closed in its block", b.File, b.Line, heredoc)
		}
	}
	return sb.String(), nil
}

var heredocRe = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// heredocDelim returns the delimiter of a here-document a line starts, or
// "".
func heredocDelim(line string) string {
	if m := heredocRe.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// QuickStartSection is the README heading whose shell blocks make the quick
// start.
const QuickStartSection = "Quick start"

// QuickStart returns the shell blocks of the README's quick start section,
// in order. A skipped block there is an error: the quick start runs whole.
func QuickStart(readme string) ([]Block, error) {
	blocks, err := ReadBlocks(readme)
	if err != nil {
		return nil, err
	}
	qs := Select(blocks, func(b Block) bool { return b.IsShell() && b.Section == QuickStartSection })
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s: no shell blocks under %q", readme, QuickStartSection)
	}
	for _, b := range qs {
		if b.Skip != "" {
			return nil, fmt.Errorf("%s:%d: the quick start may not skip a block (%s)", b.File, b.Line, b.Skip)
		}
	}
	return qs, nil
}
