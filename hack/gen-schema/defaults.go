package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// defaults maps a field path ("spec.host.files[].mode") to its default
// values as compact JSON, by the condition under which each applies ("" for
// always, otherwise for example "role ControlPlane").
type defaults map[string]map[string]string

// specDefaults returns what the newest version's SetDefaults
// (machineadm.SetDefaults) fills in. It runs
// SetDefaults instead of reading the comments, so the reference shows
// what the code does; a default that depends on the role is listed per
// role.
func specDefaults() (defaults, error) {
	roles := []machineadm.Role{machineadm.RoleControlPlane, machineadm.RoleWorker}
	perRole := map[machineadm.Role]map[string]string{}
	for _, role := range roles {
		found := map[string]string{}
		// A skeleton with every optional section present and one element
		// in every list shows the defaults inside them; a bare spec shows
		// the defaults for absent fields (nil pointers such as
		// node.taints or report.console).
		var skeleton machineadm.MachineBootstrapConfig
		grow(reflect.ValueOf(&skeleton).Elem())
		skeleton.Spec.Role = role
		bare := machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: role}}
		variants := []*machineadm.MachineBootstrapConfig{&skeleton, &bare}
		if role == machineadm.RoleControlPlane {
			// The binaries' defaults apply to the Systemd runtime only.
			systemd := machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Role: role,
				ControlPlane: &machineadm.ControlPlane{Runtime: machineadm.RuntimeSystemd}}}
			variants = append(variants, &systemd)
		}
		for _, c := range variants {
			before, err := tree(c)
			if err != nil {
				return nil, err
			}
			machineadm.SetDefaults(c)
			after, err := tree(c)
			if err != nil {
				return nil, err
			}
			if err := diff(before, after, "", found); err != nil {
				return nil, err
			}
		}
		perRole[role] = found
	}
	out := defaults{}
	for _, role := range roles {
		for p := range perRole[role] {
			out[p] = map[string]string{}
		}
	}
	for p, byCond := range out {
		cp, inCP := perRole[machineadm.RoleControlPlane][p]
		w, inW := perRole[machineadm.RoleWorker][p]
		if inCP && inW && cp == w {
			byCond[""] = cp
			continue
		}
		if inCP {
			byCond["role ControlPlane"] = cp
		}
		if inW {
			byCond["role Worker"] = w
		}
	}
	return out, nil
}

// grow makes every pointer non-nil and gives every list of objects one
// element, all the way down; lists of scalars and maps stay empty so that
// their own defaults show.
func grow(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		// A pointer to a scalar (maxAge *int32, console *bool) stays nil:
		// a zero there is a value the user gave, which SetDefaults keeps.
		if k := v.Type().Elem().Kind(); k != reflect.Struct && k != reflect.Slice && k != reflect.Map {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		grow(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			grow(v.Field(i))
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			grow(v.Index(0))
		}
	}
}

// tree returns the JSON form of v as nested maps and lists.
func tree(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var t any
	return t, json.Unmarshal(data, &t)
}

// diff records in found every value of after that before lacks or holds
// differently, by path; lists are compared item by item ("[]").
func diff(before, after any, path string, found map[string]string) error {
	switch a := after.(type) {
	case map[string]any:
		b, _ := before.(map[string]any)
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := diff(b[k], a[k], join(path, k), found); err != nil {
				return err
			}
		}
		return nil
	case []any:
		if b, ok := before.([]any); ok && len(b) == len(a) {
			for i := range a {
				if err := diff(b[i], a[i], path+"[]", found); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if reflect.DeepEqual(before, after) {
		return nil
	}
	data := compactJSON(after)
	if old, ok := found[path]; ok && old != data {
		return fmt.Errorf("%s: two different defaults, %s and %s", path, old, data)
	}
	found[path] = data
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// documentedDefault extracts a literal default from a field's description:
// `Default "x"`, `Default: 6443`, `Default true`, `Default ["a", "b"]` or
// `"x" (default)` / `"x" (the default)`. It returns the literal as
// compact JSON, or "" when the description states none.
func documentedDefault(desc string) string {
	for _, pat := range []string{"Default: ", "Default "} {
		if i := strings.Index(desc, pat); i >= 0 {
			if lit := jsonPrefix(desc[i+len(pat):]); lit != "" {
				return lit
			}
		}
	}
	for _, pat := range []string{" (default)", " (the default)"} {
		if i := strings.Index(desc, pat); i > 0 && desc[i-1] == '"' {
			if j := strings.LastIndex(desc[:i-1], `"`); j >= 0 {
				return desc[j:i]
			}
		}
	}
	return ""
}

// literalRE matches a JSON string, number, boolean or flat list at the
// start of a text.
var literalRE = regexp.MustCompile(`^("[^"]*"|-?[0-9]+|true\b|false\b|\[[^\]]*\])`)

// jsonPrefix returns the JSON literal at the start of s, compacted, or "".
func jsonPrefix(s string) string {
	m := literalRE.FindString(s)
	if m == "" {
		return ""
	}
	var v any
	if json.Unmarshal([]byte(m), &v) != nil {
		return ""
	}
	return compactJSON(v)
}

// compactJSON encodes v without escaping <, > and &.
func compactJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}
