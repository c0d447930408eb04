package printable

import "testing"

func TestEscape(t *testing.T) {
	for _, tc := range []struct {
		in           string
		keepNewlines bool
		want         string
	}{
		{"plain text, ünïcode, \\ and \"quotes\"", false, "plain text, ünïcode, \\ and \"quotes\""},
		{"title\x1b]0;owned\x07", false, `title\x1b]0;owned\a`},
		{"csi\u009b2J del\x7f", false, `csi\u009b2J del\x7f`},
		{"bad\xffutf8", false, `bad\xffutf8`},
		{"a\nb\r\tc", false, `a\nb\r\tc`},
		{"a\nb\r", true, "a\nb\\r"},
		{"zero\u200bwidth", false, `zero\u200bwidth`},
		{"\ufffd is printable", false, "\ufffd is printable"},
	} {
		got := Escape(tc.in, tc.keepNewlines)
		if got != tc.want {
			t.Errorf("Escape(%q, %v) = %q, want %q", tc.in, tc.keepNewlines, got, tc.want)
		}
		if again := Escape(got, tc.keepNewlines); again != got {
			t.Errorf("Escape twice: %q, then %q", got, again)
		}
	}
}
