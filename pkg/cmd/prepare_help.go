package cmd

import (
	"fmt"
	"strings"

	"github.com/machineadm/machineadm/pkg/session"
)

// preparePhases lists the phases `machineadm prepare` runs on this OS,
// one per line with its one-line description, indented for the help
// text. They come from the host concern registry (pkg/host, through the
// prepare workflow), never from a list kept here; phases a spec only
// sometimes asks for (domain-join) are not among them.
func preparePhases() string {
	nodes := session.Workflow(session.Prepare, nil).Nodes()
	width := 0
	for _, n := range nodes {
		width = max(width, len(n.Name))
	}
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, n.Name, n.Phase.Short)
	}
	return b.String()
}

// prepareShort is prepare's one-line help, naming this OS's host phases
// (after host-check) from the registry.
func prepareShort() string {
	names := session.Workflow(session.Prepare, nil).Names()
	if len(names) > 0 && names[0] == "host-check" {
		names = names[1:]
	}
	return "Prepare this host (" + strings.Join(names, ", ") + ") without joining a cluster"
}
