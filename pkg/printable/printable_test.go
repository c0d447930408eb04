package printable

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShow(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind Kind
		want string
	}{
		{"plain text, ünïcode ✓, \\ and \"quotes\"", Line, "plain text, ünïcode ✓, \\ and \"quotes\""},
		{"title\x1b]0;owned\x07", Line, `title\x1b]0;owned\x07`},
		{"csi\u009b2J del\x7f", Line, `csi\u009b2J del\x7f`},
		{"bad\xffutf8", Line, `bad\xffutf8`},
		{"a\nb\r\tc", Line, `a\x0ab\x0d c`},
		{"a\nb\r", Text, "a\nb\\x0d"},
		{"zero\u200bwidth", Line, `zero\u200bwidth`},
		{"sep\u2028par\u2029nbsp\u00a0", Text, `sep\u2028par\u2029nbsp\u00a0`},
		{"bidi\u202e\u2066", Text, `bidi\u202e\u2066`},
		{"\ufffd is printable", Line, "\ufffd is printable"},
		{"emoji \U0001F600 \U000E0001", Line, "emoji \U0001F600 \\U000e0001"},
		// Identifiers: ASCII only, so that a homoglyph is as visible as a
		// zero-width character; the space and tab are escaped too.
		{"worker-1", Ident, "worker-1"},
		{"w\u043erker-1", Ident, `w\u043erker-1`},
		{"worker\u200b-1", Ident, `worker\u200b-1`},
		{"ünïcode", Ident, `\u00fcn\u00efcode`},
		{"machineadm bootstrap: Succeeded", Ident, `machineadm\x20bootstrap:\x20Succeeded`},
		{"a\tb\nc", Ident, `a\x09b\x0ac`},
		{"spec.node.labels[ex\x1b]", Ident, `spec.node.labels[ex\x1b]`},
	} {
		got := Show(tc.in, tc.kind)
		if got != tc.want {
			t.Errorf("Show(%q, %v) = %q, want %q", tc.in, tc.kind, got, tc.want)
		}
		if again := Show(got, tc.kind); again != got {
			t.Errorf("Show twice: %q, then %q", got, again)
		}
	}
}

// TestShowKeepsNothingInvisible: over every rune and every kind, what Show
// returns is valid UTF-8 whose runes are all kept by Keeps; an Ident is
// printable ASCII without the space, a Line holds no line break.
func TestShowKeepsNothingInvisible(t *testing.T) {
	var all strings.Builder
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if utf8.ValidRune(r) {
			all.WriteRune(r)
		}
	}
	all.WriteString("\xff\xc3")
	for _, k := range []Kind{Ident, Line, Text} {
		got := Show(all.String(), k)
		if !utf8.ValidString(got) {
			t.Fatalf("kind %d: not UTF-8", k)
		}
		for _, r := range got {
			if !Keeps(r, k) {
				t.Fatalf("kind %d: %U shown raw", k, r)
			}
			if k == Ident && (r <= ' ' || r >= 0x7f) {
				t.Fatalf("identifier shows %U", r)
			}
			if k == Line && (r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' || r == '\u0085') {
				t.Fatalf("line shows a line break %U", r)
			}
		}
	}
}
