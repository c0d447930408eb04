// Package doctable keeps a generated table in a Markdown document equal to
// the registry it is generated from. The tests of the registries (error
// classes, render formats, host concerns) call Check: the document's table
// must be the registry's, byte for byte, or the test fails and says which
// command rewrites it. It is for tests only.
package doctable

import (
	"os"
	"strings"
	"testing"
)

// Table names where a generated table stands in a document.
type Table struct {
	// Path is the document, relative to the test's package directory.
	Path string
	// Begin is the text the table starts with: its header row, or a marker
	// line before it. Begin is part of the table when End is empty.
	Begin string
	// End is the marker after the table; empty: the table ends at the
	// first blank line after Begin.
	End string
	// Regenerate is the command that rewrites the table, for the error.
	Regenerate string
}

// Check compares the document's table with want. With update it rewrites
// the document's table to want instead of failing. The document must hold
// Begin (and End, when set); otherwise the test fails.
func Check(t testing.TB, tab Table, want string, update bool) {
	t.Helper()
	doc, err := os.ReadFile(tab.Path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(doc), tab.Begin)
	if !ok {
		t.Fatalf("%s has no table starting %q", tab.Path, tab.Begin)
	}
	var current, after string
	if tab.End != "" {
		current, after, ok = strings.Cut(rest, tab.End)
		after = tab.End + after
	} else {
		// The header row belongs to the table; it ends after the line
		// before the first blank line.
		var body string
		body, after, ok = strings.Cut(rest, "\n\n")
		current, after = tab.Begin+body+"\n", "\n"+after
	}
	if !ok {
		t.Fatalf("%s: the table starting %q has no end", tab.Path, tab.Begin)
	}
	head := ""
	if tab.End != "" {
		head = tab.Begin
	}
	if current == want {
		return
	}
	if update {
		if err := os.WriteFile(tab.Path, []byte(before+head+want+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the table differs from its registry (check the change, then run %s)\n--- document\n%s\n--- registry\n%s", tab.Path, tab.Regenerate, current, want)
}
