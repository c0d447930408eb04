package builtins_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/doctable"
	"github.com/machineadm/machineadm/pkg/host"
)

var update = flag.Bool("update", false, "rewrite the phase table of docs/host-preparation.md from the registry")

const (
	docPath    = "../../../docs/host-preparation.md"
	tableBegin = "<!-- BEGIN host concerns: generated from the registry by `go test ./pkg/host/builtins -run TestDocTable -update` -->"
	tableEnd   = "<!-- END host concerns -->"
)

// TestDocTable: the phase table of docs/host-preparation.md is the host
// concern registry's, row for row; -update rewrites it.
func TestDocTable(t *testing.T) {
	doctable.Check(t, doctable.Table{
		Path:       docPath,
		Begin:      tableBegin + "\n",
		End:        tableEnd,
		Regenerate: "go test ./pkg/host/builtins -run TestDocTable -update",
	}, docTable(host.Concerns()), *update)
}

// docTable renders the concerns as a Markdown table.
func docTable(cs []host.Concern) string {
	var b strings.Builder
	b.WriteString("| order | phase | OS | runs | spec fields | class | validated by | does |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range cs {
		when := "before kubeadm"
		if c.AfterKubeadm {
			when = "after kubeadm's control plane"
		}
		fields := "—"
		if len(c.Fields) > 0 {
			fields = "`" + strings.Join(c.Fields, "`, `") + "`"
		}
		val := "—"
		if c.Validation != "" {
			val = c.Validation
		}
		fmt.Fprintf(&b, "| %d | `%s` | %s | %s | %s | `%s` | %s | %s |\n",
			c.Order, c.Name, strings.Join(c.OS, ", "), when, fields, c.Class, val, strings.ReplaceAll(c.Short, "|", `\|`))
	}
	return b.String()
}
