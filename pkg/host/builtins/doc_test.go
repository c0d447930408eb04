package builtins_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

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
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), tableBegin+"\n")
	current, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s: no table between %q and %q", docPath, tableBegin, tableEnd)
	}
	want := docTable(host.Concerns())
	if current == want {
		return
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(before+tableBegin+"\n"+want+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the phase table differs from the host concern registry; run go test ./pkg/host/builtins -run TestDocTable -update\n--- doc\n%s--- registry\n%s", docPath, current, want)
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
