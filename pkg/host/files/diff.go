package files

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// Diff renders the change for a dry run: a unified diff (as `diff -u`
// prints it, with "a/" and "b/" prefixes) for text content, or one line
// that says what would happen when the content is secret (Desired.Secret)
// or binary (a NUL byte or invalid UTF-8) or not held in memory (larger
// than InlineMax, or a Blob). Metadata changes get their own
// line. An unchanged file gives "".
func Diff(c Change) string {
	if !c.Changed() {
		return ""
	}
	var b strings.Builder
	p := c.Desired.Path
	if c.MetaChanged() {
		fmt.Fprintf(&b, "mode/owner %s: %04o %d:%d -> %04o %d:%d\n", p, c.Old.Mode, c.Old.UID, c.Old.GID, c.New.Mode, c.New.UID, c.New.GID)
	}
	if !c.ContentChanged() {
		return b.String()
	}
	// Small content kept on disk (a fetched Blob) is shown as if held.
	for _, st := range []*State{&c.Old, &c.New} {
		if st.src != nil && st.Len() <= InlineMax {
			if l, err := st.Load(); err == nil {
				*st = l
			}
		}
	}
	switch {
	case c.Desired.Secret:
		fmt.Fprintf(&b, "%s: content hidden (secret); %s\n", p, sizes(c))
		return b.String()
	case c.Old.src != nil || c.New.src != nil:
		fmt.Fprintf(&b, "%s: content not shown (larger than %d bytes); %s\n", p, InlineMax, sizes(c))
		return b.String()
	case !isText(c.Old.Content) || !isText(c.New.Content):
		fmt.Fprintf(&b, "%s: binary content; %s\n", p, sizes(c))
		return b.String()
	}
	from, to := "a"+p, "b"+p
	if !c.Old.Exists {
		from = "/dev/null"
	}
	if !c.New.Exists {
		to = "/dev/null"
	}
	ud := difflib.UnifiedDiff{
		A:        splitLines(c.Old.Content),
		B:        splitLines(c.New.Content),
		FromFile: from,
		ToFile:   to,
		Context:  diffContext,
	}
	text, err := difflib.GetUnifiedDiffString(ud)
	if err != nil {
		fmt.Fprintf(&b, "%s: %s (diff failed: %v)\n", p, sizes(c), err)
		return b.String()
	}
	b.WriteString(text)
	return b.String()
}

func sizes(c Change) string {
	switch {
	case !c.Old.Exists:
		return fmt.Sprintf("would create, %d bytes", c.New.Len())
	case !c.New.Exists:
		return fmt.Sprintf("would remove, %d bytes", c.Old.Len())
	}
	return fmt.Sprintf("%d bytes -> %d bytes", c.Old.Len(), c.New.Len())
}

func isText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }

// splitLines splits keeping line ends, and marks a missing final newline
// the way diff does, so that "a" and "a\n" differ visibly.
func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	lines := difflib.SplitLines(string(b))
	// difflib.SplitLines appends "\n" to the last line; undo that when the
	// content ends with a newline, and flag it when it does not.
	last := len(lines) - 1
	if bytes.HasSuffix(b, []byte("\n")) {
		if lines[last] == "\n" {
			lines = lines[:last]
		}
	} else {
		lines[last] = strings.TrimSuffix(lines[last], "\n") + "\n\\ No newline at end of file\n"
	}
	return lines
}
