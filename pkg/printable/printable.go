// Package printable makes text that came from input safe to show to a
// person: on a terminal, in a log, an error, a report summary or a
// Kubernetes condition. Show is the one escaping function of machineadm:
// the report printer, the command line's errors and messages, spec and
// sealed-file errors and the Cluster API outcome all go through it, so
// that a character is shown the same way wherever it comes from.
//
// The rule, by what a string is (Kind):
//
//   - Ident, a name a person compares by eye (a node, host or phase name,
//     an error class, a field path, a version): only printable ASCII other
//     than the space is kept. Every other rune is escaped: control
//     characters, line breaks, the space, zero-width and other invisible
//     characters, and every letter outside ASCII, so that a homoglyph (a
//     Cyrillic "о" in "wоrker-1") is as visible as a zero-width space.
//   - Line, one line of free text (a log line, a path): printable Unicode
//     (unicode.IsPrint: letters, marks, numbers, punctuation, symbols and
//     the ASCII space) is kept, a tab becomes a space, everything else is
//     escaped: C0 controls with the line feed and carriage return, DEL, C1
//     controls, bidirectional and zero-width format characters, the line
//     and paragraph separators U+2028 and U+2029, spaces other than U+0020.
//   - Text, free text of several lines (an error, a hint): as Line, but a
//     line feed stays. A printer that shows Text indents its continuation
//     lines, so no line of it starts where the printer's own lines do.
//
// Escapes are Go's: \xNN for a rune below U+0080 and for a byte that is
// not UTF-8, \uNNNN, \UNNNNNNNN. A backslash is kept as it is, so showing
// twice changes nothing more.
package printable

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind says what a string is, and so what Show keeps of it.
type Kind int

const (
	// Ident is a name: only printable ASCII other than the space is kept.
	Ident Kind = iota
	// Line is one line of free text: printable Unicode and the space are
	// kept, a tab becomes a space, line breaks are escaped.
	Line
	// Text is free text of several lines: as Line, line feeds kept.
	Text
)

// Keeps reports whether Show keeps the rune r as it is in a string of
// kind k (a tab in Line or Text is replaced, not kept).
func Keeps(r rune, k Kind) bool {
	switch {
	case k == Ident:
		return r > ' ' && r < 0x7f
	case r == '\n':
		return k == Text
	case r == utf8.RuneError:
		return true // U+FFFD itself; a byte that is not UTF-8 is handled apart
	}
	return unicode.IsPrint(r)
}

// Show returns s as it may be shown to a person, by its kind k (see the
// package comment). s is returned unchanged, without allocating, when it
// needs no escape.
func Show(s string, k Kind) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !Keeps(r, k) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case Keeps(r, k):
			b.WriteString(s[i : i+n])
		case r == '\t' && k != Ident:
			b.WriteByte(' ')
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}
