// Package printable makes text that came from input safe to print on a
// terminal, in a log, a report or a Kubernetes condition: control
// characters (a terminal escape sequence, a carriage return that rewrites
// a line) are shown as Go escapes instead of reaching the reader raw.
//
// Escape is for text escaped once where it is kept (spec and sealed-file
// errors when they are built, a Cluster API status): it escapes every
// rune that is not printable, zero-width and other format characters
// included. report.TerminalSafe is the other escaper, applied where a
// whole report or error is shown: it escapes only what a terminal acts on
// (C0 but the line feed, DEL, C1, bidirectional controls), turns a tab
// into a space to keep a summary's columns, and spells every C0 control
// as \xNN (\x07, not \a). pkg/cmd's shown() is TerminalSafe with the line
// feed escaped too. The two differ in what they escape and how, so
// neither serves for the other.
package printable

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every control character (C0, DEL, C1), every
// other non-printable rune and every invalid UTF-8 byte replaced by its Go
// escape ("\x1b", "\u009b", "\xff"); with keepNewlines, line feeds stay.
// Printable text, backslashes included, is kept as it is, so escaping
// twice changes nothing more; s is returned unchanged (no allocation)
// when it needs no escape.
func Escape(s string, keepNewlines bool) string {
	keep := func(r rune, n int) bool {
		return (r != utf8.RuneError || n != 1) && (unicode.IsPrint(r) || keepNewlines && r == '\n')
	}
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !keep(r, n) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case keep(r, n):
			b.WriteString(s[:n])
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[n:]
	}
	return b.String()
}
