package upgrade

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/fill"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

const testKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// fullSnapshot is the snapshot of a spec with every field set (fill.All),
// as a JSON tree.
func fullSnapshot(t *testing.T) map[string]any {
	t.Helper()
	var c machineadm.MachineBootstrapConfig
	fill.All(t, &c)
	raw, err := Snapshot(&c, testKey)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// schemaPaths returns the JSON path of every field of the spec's types,
// below structs (not into maps or free-form values), lists by their
// element type.
func schemaPaths() []string {
	var out []string
	var walk func(t reflect.Type, p string)
	walk = func(t reflect.Type, p string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" && f.Anonymous {
				walk(f.Type, p)
				continue
			}
			fp := join(p, name)
			out = append(out, fp)
			walk(f.Type, fp)
		}
	}
	walk(reflect.TypeFor[machineadm.MachineBootstrapConfig](), "")
	return out
}

// TestEveryFieldHasARow fails for a spec field that neither has a row nor
// a parent with one: a field added to the spec must be classified.
func TestEveryFieldHasARow(t *testing.T) {
	paths := schemaPaths()
	if len(paths) < 50 {
		t.Fatalf("the walk found only %d fields", len(paths))
	}
	for _, p := range paths {
		if _, ok := Lookup(p); !ok && !hasRowsBelow(p) {
			t.Errorf("spec field %s has no row in the upgrade field table (pkg/upgrade/fields.go)", p)
		}
	}
	for _, f := range fields {
		if !slices.Contains(paths, f.Path) {
			t.Errorf("row %s names no field of the spec", f.Path)
		}
	}
}

func TestRowsAreComplete(t *testing.T) {
	for _, f := range fields {
		if f.Why == "" {
			t.Errorf("row %s says nothing (Why)", f.Path)
		}
		switch f.Effect {
		case InPlace:
			if len(f.Phases) == 0 {
				t.Errorf("in-place row %s names no phase", f.Path)
			}
			for _, ph := range f.Phases {
				name, comp, _ := strings.Cut(ph, "/")
				if !slices.Contains(PhaseOrder, name) {
					t.Errorf("row %s: phase %q is not in PhaseOrder", f.Path, name)
				}
				if comp != "" && (name != PhaseControlPlane || !slices.Contains(ControlPlaneComponents, comp)) {
					t.Errorf("row %s: %q is not a control-plane component", f.Path, ph)
				}
			}
		case Refused, BootstrapOnly, RunOnly:
			if len(f.Phases) > 0 || f.Disrupts {
				t.Errorf("%s row %s names phases", f.Effect, f.Path)
			}
		default:
			t.Errorf("row %s: unknown effect %q", f.Path, f.Effect)
		}
	}
}

// set changes the value at path in m: a field with rows below it is
// removed (a change of its presence), any other value changed in kind.
func set(t *testing.T, m map[string]any, path string) {
	t.Helper()
	parts := strings.Split(path, ".")
	cur := m
	for _, k := range parts[:len(parts)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			t.Fatalf("%s: %s is not an object in the full spec", path, k)
		}
		cur = next
	}
	k := parts[len(parts)-1]
	if hasRowsBelow(path) {
		delete(cur, k)
		return
	}
	switch v := cur[k].(type) {
	case string:
		cur[k] = v + "-changed"
	case bool:
		cur[k] = !v
	case json.Number:
		cur[k] = json.Number(v.String() + "1")
	case []any:
		cur[k] = append(v, v[0])
	case map[string]any:
		v["changed-key"] = "x"
	default:
		t.Fatalf("%s: no value in the full spec (%T)", path, v)
	}
}

// TestEveryRowDecides changes each field of the table, alone, in a spec
// with every field set, and checks the plan: exactly one change, decided
// by that row (refused for a refused field, planned in its phases for an
// in-place one, no phase for the others).
func TestEveryRowDecides(t *testing.T) {
	for _, f := range fields {
		if f.Path == "spec.kubernetes.version" {
			continue // TestVersionRules
		}
		t.Run(f.Path, func(t *testing.T) {
			old := fullSnapshot(t)
			nw := fullSnapshot(t)
			set(t, nw, f.Path)
			a, _ := json.Marshal(old)
			b, _ := json.Marshal(nw)
			p, err := Compute(a, b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Changes) != 1 {
				t.Fatalf("want 1 change, got %+v", p.Changes)
			}
			c := p.Changes[0]
			if c.Field.Path != f.Path {
				t.Fatalf("change %s decided by row %s, want %s", c.Path, c.Field.Path, f.Path)
			}
			if c.Refused != (f.Effect == Refused) {
				t.Errorf("refused = %v for a %s field", c.Refused, f.Effect)
			}
			errs := p.Errors()
			if f.Effect == Refused {
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), f.Path) || !strings.Contains(errs[0].Error(), f.Why) {
					t.Errorf("refusal does not name %s and why: %v", f.Path, errs)
				}
				if len(p.Steps) != 0 {
					t.Errorf("a refused change planned steps: %+v", p.Steps)
				}
				return
			}
			if len(errs) != 0 {
				t.Errorf("%s change refused: %v", f.Effect, errs)
			}
			var got []string
			for _, s := range p.Steps {
				if s.Phase == PhaseDrain || s.Phase == PhaseUncordon {
					continue
				}
				got = append(got, s.Phase)
				if !slices.Contains(s.Paths, c.Path) {
					t.Errorf("step %s does not name %s: %v", s.Phase, c.Path, s.Paths)
				}
			}
			var want []string
			for _, ph := range f.Phases {
				name, _, _ := strings.Cut(ph, "/")
				if !slices.Contains(want, name) {
					want = append(want, name)
				}
			}
			if f.Path == "spec.host.files" {
				// No kubelet binary among the filled files: no restart
				// (TestOnlyANewKubeletBinaryRestartsTheKubelet).
				want = []string{PhaseFiles}
			}
			slices.SortFunc(want, func(a, b string) int { return slices.Index(PhaseOrder, a) - slices.Index(PhaseOrder, b) })
			if !slices.Equal(got, want) {
				t.Errorf("phases %v, want %v", got, want)
			}
			if p.Drain != f.Disrupts || p.Has(PhaseDrain) != f.Disrupts || p.Has(PhaseUncordon) != f.Disrupts {
				t.Errorf("drain %v (steps %+v) for a row that disrupts: %v", p.Drain, p.Steps, f.Disrupts)
			}
		})
	}
}

// TestNamedRefusals spells out the refusals the upgrade promises, so that
// a table edit that makes one of them in place fails here by name.
func TestNamedRefusals(t *testing.T) {
	for _, p := range []string{
		"spec.role", "spec.action", "spec.os", "spec.kubernetes.controlPlaneEndpoint", "spec.kubernetes.clusterName",
		"spec.kubernetes.networking", "spec.controlPlane", "spec.controlPlane.etcd", "spec.controlPlane.etcd.local",
		"spec.controlPlane.etcd.external", "spec.controlPlane.runtime", "spec.node.name", "spec.node.criSocket",
		"spec.controlPlane.advertiseAddress", "spec.join.apiServerEndpoint",
	} {
		f, ok := Lookup(p)
		if !ok || f.Path != p || f.Effect != Refused {
			t.Errorf("%s: row %+v, want a Refused row of its own", p, f)
		}
	}
	for _, p := range []string{
		"spec.kubernetes.version", "spec.controlPlane.apiServer.extraArgs", "spec.controlPlane.controllerManager",
		"spec.controlPlane.scheduler", "spec.host.files", "spec.host.sysctl", "spec.host.kernelModules",
		"spec.host.containerd", "spec.host.staticPods",
		// U11: the typed security settings and the profile change on a
		// running node, each with a row of its own (not the parent's
		// "changes the node's role").
		"spec.controlPlane.apiServer.audit", "spec.controlPlane.apiServer.encryption",
		"spec.controlPlane.apiServer.authentication", "spec.controlPlane.apiServer.authorization",
		"spec.controlPlane.apiServer.extraVolumes", "spec.controlPlane.controllerManager.extraVolumes",
		"spec.controlPlane.scheduler.extraVolumes", "spec.security",
	} {
		f, ok := Lookup(p)
		if !ok || f.Path != p || f.Effect != InPlace {
			t.Errorf("%s: row %+v, want an InPlace row of its own", p, f)
		}
	}
}
