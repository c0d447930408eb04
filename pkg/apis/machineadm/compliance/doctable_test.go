package compliance

import (
	goflag "flag"
	"fmt"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/doctable"
)

var update = goflag.Bool("update", false, "rewrite docs/compliance.md's check tables")

// docTable renders profile p's checks as docs/compliance.md's table.
func docTable(p Profile) string {
	var b strings.Builder
	b.WriteString("| ID | scope | automated | check | how | how machineadm satisfies it, or why it cannot |\n|---|---|---|---|---|---|\n")
	for _, c := range Checks(p) {
		auto := "no"
		if c.Automated {
			auto = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", c.ID, c.Scope, auto, c.Title, c.How, strings.ReplaceAll(c.Note, "|", "\\|"))
	}
	return b.String()
}

// docs/compliance.md's tables are the catalogue's checks, row for row.
func TestDocTable(t *testing.T) {
	for _, p := range Profiles {
		doctable.Check(t, doctable.Table{
			Path:       "../../../../docs/compliance.md",
			Begin:      "<!-- checks " + string(p) + " begin -->\n",
			End:        "<!-- checks " + string(p) + " end -->",
			Regenerate: "go test ./pkg/apis/machineadm/compliance -run TestDocTable -update",
		}, docTable(p), *update)
	}
}
