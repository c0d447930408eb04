package cmd

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/session"
)

// TestPrepareHelpListsTheRegisteredPhases: `prepare --help` lists every
// phase of the prepare workflow (host-check and one per registered host
// concern of this OS) with its one-line description, in order, and its
// one-line help names the same phases.
func TestPrepareHelpListsTheRegisteredPhases(t *testing.T) {
	var out bytes.Buffer
	root := NewRootCommand(strings.NewReader(""), &out, &out)
	root.SetArgs([]string{"prepare", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	nodes := session.Workflow(session.Prepare, nil).Nodes()
	if len(nodes) < 2 {
		t.Fatalf("prepare workflow has %d phases", len(nodes))
	}
	at := 0
	for _, n := range nodes {
		line := fmt.Sprintf("  %s  ", n.Name)
		i := strings.Index(help[at:], line)
		if i < 0 || !strings.Contains(help[at+i:], n.Phase.Short) {
			t.Errorf("prepare --help lacks phase %q (%q) in order:\n%s", n.Name, n.Phase.Short, help)
			continue
		}
		at += i + len(line)
	}
	for _, n := range nodes[1:] {
		if !strings.Contains(prepareShort(), n.Name) {
			t.Errorf("prepare's short help %q lacks %s", prepareShort(), n.Name)
		}
	}
}
