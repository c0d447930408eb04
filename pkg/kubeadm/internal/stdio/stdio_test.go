package stdio

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestCaptureKeepsLinesAfterAnOverlongLine: a line longer than the
// longest the sink gets (a webhook's message kubeadm prints) is cut, and
// the lines after it still reach the sink: kubeadm's own lines there
// (its preflight header) must not be lost while a header written before
// the long line is kept.
func TestCaptureKeepsLinesAfterAnOverlongLine(t *testing.T) {
	var got []string
	err := Capture(func(l string) { got = append(got, l) }, func(out, _ io.Writer) error {
		fmt.Fprintln(out, "before")
		fmt.Fprintln(out, strings.Repeat("x", 3*maxLine))
		fmt.Fprint(out, "after\r\nlast without a newline")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0] != "before" || got[1] != strings.Repeat("x", maxLine)+"... [2097152 bytes cut]" || got[2] != "after" || got[3] != "last without a newline" {
		short := make([]string, len(got))
		for i, l := range got {
			short[i] = fmt.Sprintf("%.20q (%d bytes)", l, len(l))
		}
		t.Errorf("lines %v; want before, the long line cut to %d bytes saying so, after, the last line", short, maxLine)
	}
}

// TestLinesKeepsALastLineOfWholeBuffers: a last line without a newline
// comes in chunks of the reader's buffer; one whose length is a multiple
// of the buffer's (64 KiB, binary output) ended with the reader's EOF
// after its last chunk, and was lost.
func TestLinesKeepsALastLineOfWholeBuffers(t *testing.T) {
	for _, n := range []int{100, 64 * 1024, 3 * 64 * 1024, maxLine, maxLine + 64*1024} {
		var got []string
		lines(strings.NewReader("first\n"+strings.Repeat("y", n)), func(l string) { got = append(got, l) })
		want := strings.Repeat("y", min(n, maxLine))
		if n > maxLine {
			want += fmt.Sprintf("... [%d bytes cut]", n-maxLine)
		}
		if len(got) != 2 || got[0] != "first" || got[1] != want {
			t.Errorf("a last line of %d bytes without a newline: %d lines (the last %d bytes); want first and %d bytes", n, len(got), len(got[len(got)-1]), len(want))
		}
	}
}

// TestLinesSaysALineWasCut: the console and the report get a cut line
// saying it was cut and how much, never a line silently shortened nor a
// UTF-8 sequence broken at the cut; a line of exactly maxLine bytes is
// whole.
func TestLinesSaysALineWasCut(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{strings.Repeat("x", maxLine), strings.Repeat("x", maxLine)},
		{strings.Repeat("x", maxLine) + "\r", strings.Repeat("x", maxLine) + "... [1 bytes cut]"},
		{strings.Repeat("x", maxLine-1) + "é" + "tail", strings.Repeat("x", maxLine-1) + "... [6 bytes cut]"},
		{strings.Repeat("x", maxLine-2) + "é" + "tail", strings.Repeat("x", maxLine-2) + "é... [4 bytes cut]"},
	} {
		var got []string
		lines(strings.NewReader(c.in+"\r\nnext\n"), func(l string) { got = append(got, l) })
		if len(got) != 2 || got[0] != c.want || got[1] != "next" {
			short := make([]string, len(got))
			for i, l := range got {
				short[i] = fmt.Sprintf("...%q (%d bytes)", l[max(0, len(l)-24):], len(l))
			}
			t.Errorf("a line of %d bytes: %v; want ...%q (%d bytes), next", len(c.in), short, c.want[len(c.want)-24:], len(c.want))
		}
	}
}
