package upgrade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Change is one difference between the recorded spec and the new one.
type Change struct {
	// Path is the changed field's path with list indexes and map keys as
	// the spec has them ("spec.host.sysctl", "spec.kubernetes.version").
	// A field compared whole (a list, a map) is one change.
	Path string
	// Field is the row of the table that decides it.
	Field Field
	// Old and New are the values for a person: a scalar as it is, a list
	// or map by its size, a withheld secret as "(secret)"; "" when unset.
	Old, New string
	// Why overrides Field.Why (a version change kubeadm refuses).
	Why string
	// Refused marks a change that cannot be made: Field.Effect Refused, or
	// a version change outside kubeadm's skew rules.
	Refused bool
}

// Reason is why the change is refused, or what it does.
func (c Change) Reason() string {
	if c.Why != "" {
		return c.Why
	}
	return c.Field.Why
}

// Step is one phase of the plan with the changes that make it run.
type Step struct {
	// Phase is a PhaseOrder name; Components, for PhaseControlPlane, are
	// the components it replaces, in ControlPlaneComponents' order (all of
	// them for a change of spec.kubernetes.imageRepository or the
	// Systemd runtime's binaries).
	Phase      string
	Components []string
	// Paths are the changed fields that bring the phase in.
	Paths []string
}

// Plan is what `machineadm upgrade` does to bring a node from its
// recorded spec to a new one (Compute).
type Plan struct {
	// From and To are spec.kubernetes.version before and after.
	From, To string
	// Changes are every difference, in the spec's field order; the refused
	// ones have Refused set.
	Changes []Change
	// Steps are the phases that apply the changes, in PhaseOrder.
	Steps []Step
	// Drain says the node is cordoned and drained first (a change with
	// Field.Disrupts) and uncordoned after.
	Drain bool
}

// Options are what Compute checks a version change against.
type Options struct {
	// KubeadmVersion is the embedded kubeadm's version ("v1.37.2"): it
	// upgrades to its own minor only, and to no newer patch than its own.
	KubeadmVersion string
}

// Compute compares the recorded spec old with the new spec new (both
// snapshots under the same key, Snapshot) and returns the plan. A change
// of a field without a row (a spec from a newer machineadm) is refused.
func Compute(old, new json.RawMessage, o Options) (*Plan, error) {
	var a, b any
	if err := unmarshal(old, &a); err != nil {
		return nil, fmt.Errorf("recorded spec: %w", err)
	}
	if err := unmarshal(new, &b); err != nil {
		return nil, fmt.Errorf("new spec: %w", err)
	}
	p := &Plan{}
	p.From, _ = lookupString(a, "spec", "kubernetes", "version")
	p.To, _ = lookupString(b, "spec", "kubernetes", "version")
	diff(a, b, "", "", &p.Changes)
	for i := range p.Changes {
		c := &p.Changes[i]
		c.Refused = c.Field.Effect == Refused
		if c.Field.Path == "spec.kubernetes.version" {
			if why := versionRefusal(p.From, p.To, o.KubeadmVersion); why != "" {
				c.Refused, c.Why = true, why
			}
		}
		if c.Field.Path == "spec.controlPlane.apiServer.encryption" {
			if why := encryptionRefusal(a, b); why != "" {
				c.Refused, c.Why = true, why
			}
		}
	}
	for i := range p.Changes {
		c := &p.Changes[i]
		if c.Field.Path == "spec.host.files" && !kubeletFileChanged(a, b) {
			// Only a new kubelet binary restarts the kubelet.
			c.Field.Phases = []string{PhaseFiles}
		}
	}
	runtime, _ := lookupString(b, "spec", "controlPlane", "runtime")
	p.steps(runtime == systemdRuntime)
	return p, nil
}

// kubeletFileChanged says whether a spec.host.files entry whose path ends
// in "/kubelet" (the kubelet's binary) differs between a and b, or is in
// one of them only.
func kubeletFileChanged(a, b any) bool {
	kubelets := func(v any) map[string]string {
		out := map[string]string{}
		m, _ := v.(map[string]any)
		spec, _ := m["spec"].(map[string]any)
		host, _ := spec["host"].(map[string]any)
		files, _ := host["files"].([]any)
		for _, f := range files {
			fm, _ := f.(map[string]any)
			if p, _ := fm["path"].(string); strings.HasSuffix(p, "/kubelet") {
				data, _ := json.Marshal(fm)
				out[p] = string(data)
			}
		}
		return out
	}
	x, y := kubelets(a), kubelets(b)
	if len(x) != len(y) {
		return true
	}
	for k, v := range x {
		if y[k] != v {
			return true
		}
	}
	return false
}

// systemdRuntime is spec.controlPlane.runtime's value for a control plane
// run as systemd units (machineadm.RuntimeSystemd).
const systemdRuntime = "Systemd"

func unmarshal(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// diff appends to out a change for each difference between a and b at
// path (schema: the same path without indexes and keys). An object with
// rows below it is compared key by key; anything else whole.
func diff(a, b any, path, schema string, out *[]Change) {
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if okA && okB && (schema == "" || hasRowsBelow(schema)) {
		keys := map[string]bool{}
		for k := range ma {
			keys[k] = true
		}
		for k := range mb {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			diff(ma[k], mb[k], join(path, k), join(schema, k), out)
		}
		return
	}
	if equalAt(schema, a, b) {
		return
	}
	f, ok := Lookup(schema)
	if !ok {
		f = Field{Path: schema, Effect: Refused, Why: "this machineadm does not know the field; upgrade with the machineadm that wrote the spec"}
	}
	c := Change{Path: path, Field: f, Old: show(a), New: show(b)}
	if okA && okB {
		c.Old, c.New = showKeys(ma, mb), showKeys(mb, ma)
	}
	*out = append(*out, c)
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

// equal compares two JSON values; an absent value equals an empty one
// (null, "", false, 0, [] or {}), as omitempty writes them.
func equal(a, b any) bool {
	if empty(a) && empty(b) {
		return true
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// equalAt is equal for the value at schema, except that a typed
// API-server security setting differs from its absence whatever its
// values (presenceMatters), and that a free-form map
// of the spec (FreeFormPaths: a kubelet configuration patch, sysctl) is
// empty only without keys: {"serializeImagePulls": false} is a setting,
// not an absent value.
func equalAt(schema string, a, b any) bool {
	if presenceMatters(schema) {
		if (a == nil) != (b == nil) {
			return false
		}
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		return bytes.Equal(x, y)
	}
	if !freeFormPaths()[schema] {
		return equal(a, b)
	}
	ma, _ := a.(map[string]any)
	mb, _ := b.(map[string]any)
	if (a == nil || (ma != nil && len(ma) == 0)) && (b == nil || (mb != nil && len(mb) == 0)) {
		return true
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// presenceMatters says whether the field at schema is a typed API-server
// security setting (a row applied by PhaseAPIServerConfig): there or not
// whatever its values, as the API server's files and flags follow its
// presence ({"anonymous": {"enabled": false}} turns anonymous
// authentication off; it is not an absent value).
func presenceMatters(schema string) bool {
	f, ok := Lookup(schema)
	return ok && f.Path == schema && slices.Contains(f.Phases, PhaseAPIServerConfig)
}

// freeFormPaths are the schema paths (JSON names, "." between them) of
// the spec's fields of a Go map type, found once by reflection.
var freeFormPaths = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	var walk func(t reflect.Type, p string)
	walk = func(t reflect.Type, p string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() == reflect.Map {
			out[p] = true
			return
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" && f.Anonymous {
				walk(f.Type, p)
				continue
			}
			walk(f.Type, join(p, name))
		}
	}
	walk(reflect.TypeFor[machineadm.MachineBootstrapConfig](), "")
	return out
})

func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case json.Number:
		return t.String() == "0"
	case []any:
		return len(t) == 0
	case map[string]any:
		for _, e := range t {
			if !empty(e) {
				return false
			}
		}
		return true
	}
	return false
}

func lookupString(v any, keys ...string) (string, bool) {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		v = m[k]
	}
	s, ok := v.(string)
	return s, ok
}

// steps fills Steps and Drain from the changes that are not refused. On
// a Systemd control plane (systemd) a version change also replaces every
// component's unit in PhaseControlPlane: kubeadm's upgrade writes static
// pod manifests, which that runtime does not run.
func (p *Plan) steps(systemd bool) {
	byPhase := map[string]*Step{}
	for _, c := range p.Changes {
		if c.Refused {
			continue
		}
		p.Drain = p.Drain || c.Field.Disrupts
		phases := c.Field.Phases
		if systemd && c.Field.Path == "spec.kubernetes.version" {
			phases = append(slices.Clone(phases), PhaseControlPlane)
		}
		for _, ph := range phases {
			name, comp, _ := strings.Cut(ph, "/")
			s := byPhase[name]
			if s == nil {
				s = &Step{Phase: name}
				byPhase[name] = s
			}
			if !slices.Contains(s.Paths, c.Path) {
				s.Paths = append(s.Paths, c.Path)
			}
			comps := []string{comp}
			if name == PhaseControlPlane && comp == "" {
				comps = ControlPlaneComponents
			}
			for _, cc := range comps {
				if cc != "" && !slices.Contains(s.Components, cc) {
					s.Components = append(s.Components, cc)
				}
			}
		}
	}
	if p.Drain {
		byPhase[PhaseDrain] = &Step{Phase: PhaseDrain}
		byPhase[PhaseUncordon] = &Step{Phase: PhaseUncordon}
	}
	for _, name := range PhaseOrder {
		if s := byPhase[name]; s != nil {
			slices.SortFunc(s.Components, func(a, b string) int {
				return slices.Index(ControlPlaneComponents, a) - slices.Index(ControlPlaneComponents, b)
			})
			p.Steps = append(p.Steps, *s)
		}
	}
}

// Refused returns the refused changes.
func (p *Plan) Refused() []Change {
	var out []Change
	for _, c := range p.Changes {
		if c.Refused {
			out = append(out, c)
		}
	}
	return out
}

// Errors returns one field error per refused change (field.Forbidden,
// naming the path and why), for the InvalidSpec refusal (exit code 2).
func (p *Plan) Errors() field.ErrorList {
	var out field.ErrorList
	for _, c := range p.Refused() {
		out = append(out, field.Forbidden(field.NewPath(c.Path), "cannot change in place ("+c.Old+" -> "+c.New+"): "+c.Reason()))
	}
	return out
}

// Empty says the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Steps) == 0 }

// Has says whether phase is one of the plan's steps.
func (p *Plan) Has(phase string) bool {
	return slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Phase == phase })
}

// Step returns the plan's step of phase.
func (p *Plan) Step(phase string) (Step, bool) {
	i := slices.IndexFunc(p.Steps, func(s Step) bool { return s.Phase == phase })
	if i < 0 {
		return Step{}, false
	}
	return p.Steps[i], true
}

// encryptionRefusal is why a change of spec.controlPlane.apiServer.
// encryption would leave objects unreadable, "" when it does not: the
// recorded spec's first provider of a resource group wrote its objects
// (identity: in the clear), so each of those resources must still match
// a group of the new spec that has that provider with that key (same
// type, name and withheld secret; a KMS plugin by name). The first group
// naming the resource, or else a "*.*" group, is the one that matches, as
// the API server picks it. Never names a secret.
func encryptionRefusal(a, b any) string {
	groups := func(v any) []map[string]any {
		m, _ := v.(map[string]any)
		for _, k := range []string{"spec", "controlPlane", "apiServer", "encryption"} {
			m, _ = m[k].(map[string]any)
		}
		list, _ := m["resources"].([]any)
		var out []map[string]any
		for _, g := range list {
			if gm, ok := g.(map[string]any); ok {
				out = append(out, gm)
			}
		}
		return out
	}
	strs := func(v any) []string {
		l, _ := v.([]any)
		var out []string
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	// writer returns the provider type and the JSON of what reads its
	// writes (first key, or the KMS plugin's name); "" for identity.
	writer := func(p map[string]any) (string, string, string) {
		for _, typ := range []string{"aesgcm", "aescbc", "secretbox"} {
			if k, ok := p[typ].(map[string]any); ok {
				keys, _ := k["keys"].([]any)
				if len(keys) == 0 {
					return "", "", ""
				}
				km, _ := keys[0].(map[string]any)
				name, _ := km["name"].(string)
				j, _ := json.Marshal(keys[0])
				return typ, name, string(j)
			}
		}
		if k, ok := p["kms"].(map[string]any); ok {
			name, _ := k["name"].(string)
			return "kms", name, name
		}
		return "", "", ""
	}
	reads := func(g map[string]any, typ, id string) bool {
		ps, _ := g["providers"].([]any)
		for _, p := range ps {
			pm, _ := p.(map[string]any)
			if typ == "kms" {
				if k, ok := pm["kms"].(map[string]any); ok && k["name"] == id {
					return true
				}
				continue
			}
			k, _ := pm[typ].(map[string]any)
			keys, _ := k["keys"].([]any)
			for _, key := range keys {
				if j, _ := json.Marshal(key); string(j) == id {
					return true
				}
			}
		}
		return false
	}
	newGroups := groups(b)
	match := func(res string) map[string]any {
		for _, wild := range []bool{false, true} {
			for _, g := range newGroups {
				for _, r := range strs(g["resources"]) {
					if (!wild && r == res) || (wild && r == "*.*") {
						return g
					}
				}
			}
		}
		return nil
	}
	for _, g := range groups(a) {
		ps, _ := g["providers"].([]any)
		if len(ps) == 0 {
			continue
		}
		first, _ := ps[0].(map[string]any)
		typ, name, id := writer(first)
		if typ == "" {
			continue
		}
		for _, res := range strs(g["resources"]) {
			if ng := match(res); ng == nil || !reads(ng, typ, id) {
				return fmt.Sprintf("the %s objects are encrypted with the %s key %q (the applied spec's first provider for them), which the new spec no longer has for %s: "+
					"they would be unreadable. Keep that key as a later provider, make identity or a new key first, upgrade every control plane, "+
					"rewrite every such object, then remove it (docs/upgrade.md, Encryption at rest)", res, typ, name, res)
			}
		}
	}
	return ""
}
