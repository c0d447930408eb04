package quote

import (
	"fmt"
	"slices"
	"strings"
)

// PowerShellQuotes are the characters PowerShell's tokenizer takes as a
// single quote, that is as the start or end of a verbatim string: the
// apostrophe U+0027 and the typographic quotes U+2018 (left), U+2019
// (right), U+201A (low-9) and U+201B (high-reversed-9). Inside a verbatim
// string one of them followed by another stands for the second.
var PowerShellQuotes = []rune{'\'', '\u2018', '\u2019', '\u201a', '\u201b'}

// PowerShell quotes s as a PowerShell verbatim (single-quoted) string:
// every character of PowerShellQuotes is doubled, nothing else is special
// inside (no variable expansion, no escape character, line ends are
// part of the string). PowerShell reads back s for every s.
func PowerShell(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for _, r := range s {
		if slices.Contains(PowerShellQuotes, r) {
			b.WriteRune(r)
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}

// PowerShellQuoteClass is PowerShellQuotes as a .NET regular-expression
// character class, ASCII only ("['\u2018\u2019\u201a\u201b]"), for
// quoting done by a PowerShell script at run time: the stub's
// `$v -replace CLASS, '$0$0'` doubles each quote character as PowerShell
// does here, for values (parameters given on the command line) that
// render never sees.
func PowerShellQuoteClass() string {
	var b strings.Builder
	b.WriteByte('[')
	for _, r := range PowerShellQuotes {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte(']')
	return b.String()
}
