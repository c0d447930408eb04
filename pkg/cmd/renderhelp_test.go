package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/render"
)

// TestRenderHelpListsTheRegistry: `machineadm render --help` names every
// format of pkg/render's registry with its help line, in the short
// description and the --format flag, and nothing names a format the
// registry lacks.
func TestRenderHelpListsTheRegistry(t *testing.T) {
	var out bytes.Buffer
	root := NewRootCommand(strings.NewReader(""), &out, &out)
	root.SetArgs([]string{"render", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	var names []string
	width := 0 // the help texts start in one column, after the longest name
	for _, f := range render.FormatInfos() {
		width = max(width, len(f.Format))
	}
	for _, f := range render.FormatInfos() {
		names = append(names, string(f.Format))
		if line := "  " + string(f.Format) + strings.Repeat(" ", 2+width-len(f.Format)) + f.Help + "\n"; !strings.Contains(help, line) {
			t.Errorf("render --help lacks the line %q", line)
		}
	}
	list := strings.Join(names, ", ")
	if !strings.Contains(help, "output format: "+list+" (see Formats above)") {
		t.Errorf("render --help's --format flag does not list %s:\n%s", list, help)
	}
	rc, _, err := root.Find([]string{"render"})
	if err != nil || rc.Short != "Emit bootstrap data ("+list+") that installs machineadm and runs it" {
		t.Errorf("render's short help %q does not list %s (%v)", rc.Short, list, err)
	}
}
