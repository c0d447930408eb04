package upgrade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// showKeys shows the keys a has that b lacks or gives another value,
// sorted, as "key=value" (show's values). A key only b has is not shown:
// "key=" would read as a key of a with an empty value, which a label may
// have (a key with an empty value is shown, on the side that has it).
func showKeys(a, b map[string]any) string {
	var out []string
	for k, v := range a {
		w, ok := b[k]
		x, _ := json.Marshal(v)
		y, _ := json.Marshal(w)
		if !ok || !bytes.Equal(x, y) {
			out = append(out, k+"="+show(v))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// show is a value for a person: never a secret (those are withheld in
// the snapshot already, and shown as "(secret)").
func show(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		if strings.HasPrefix(t, Withheld) {
			return "(secret)"
		}
		return t
	case bool, json.Number:
		return fmt.Sprint(t)
	case []any:
		return fmt.Sprintf("(%d items)", len(t))
	case map[string]any:
		return fmt.Sprintf("(%d keys)", len(t))
	}
	return "(value)"
}

// Print writes the plan for a person: the versions, each change with its
// effect, then the phases in order.
func (p *Plan) Print(w io.Writer) {
	if p.From == p.To {
		fmt.Fprintf(w, "Kubernetes %s (unchanged)\n", p.From)
	} else {
		fmt.Fprintf(w, "Kubernetes %s -> %s\n", p.From, p.To)
	}
	if len(p.Changes) == 0 {
		fmt.Fprintln(w, "no change: the node already runs this spec")
		return
	}
	fmt.Fprintln(w, "changes:")
	for _, c := range p.Changes {
		effect := string(c.Field.Effect)
		if c.Refused {
			effect = "REFUSED"
		}
		fmt.Fprintf(w, "  %-13s %s: %q -> %q: %s\n", effect, c.Path, c.Old, c.New, c.Reason())
	}
	if len(p.Steps) == 0 {
		fmt.Fprintln(w, "phases: none (no change touches the node)")
		return
	}
	fmt.Fprintln(w, "phases, in order:")
	for i, s := range p.Steps {
		name := s.Phase
		if len(s.Components) > 0 {
			name += " (" + strings.Join(s.Components, ", ") + ", one at a time)"
		}
		why := strings.Join(s.Paths, ", ")
		if why == "" {
			why = "around the disruptive changes"
		}
		fmt.Fprintf(w, "  %d. %s: %s\n", i+1, name, why)
	}
}
