package containerd

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// PatchField is the spec path of configPatch.
const PatchField = "spec.host.containerd.configPatch"

// PatchError is a configPatch that would break config.toml or contradict
// what machineadm generated from a structured field.
type PatchError struct {
	// Key is the TOML key the patch changes, dotted and quoted as TOML
	// writes it: plugins."io.containerd.grpc.v1.cri".containerd.
	Key string
	// Field is the structured spec field that generated the key
	// (spec.host.containerd.cgroupDriver), empty for a type problem.
	Field string
	// Msg says what is wrong.
	Msg string
	// Schema says that the key belongs to the other config version
	// (checkPatchSchema): whether it is wrong depends on the version, which
	// the installed containerd decides when ConfigVersion is 0.
	Schema bool
}

// Error names configPatch, the key and, for a contradiction, the field.
func (e *PatchError) Error() string {
	return PatchField + ": " + e.Key + ": " + e.Msg
}

// node is one generated key: its path and value.
type node struct {
	path  []string
	value any
}

// generated lists the tables and the leaves of a generated tree, in a
// stable order.
func generated(tree map[string]any) (tables, leaves []node) {
	var walk func(prefix []string, m map[string]any)
	walk = func(prefix []string, m map[string]any) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := append(slices.Clip(prefix), k)
			if sub, ok := m[k].(map[string]any); ok {
				tables = append(tables, node{path: p})
				walk(p, sub)
				continue
			}
			leaves = append(leaves, node{path: p, value: m[k]})
		}
	}
	walk(nil, tree)
	return tables, leaves
}

// lookupPath returns the value at path in tree and whether it exists.
func lookupPath(tree map[string]any, path []string) (any, bool) {
	var v any = tree
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// checkPatch compares the merged tree with the generated one (before the
// patch): every generated table must stay a table, since containerd
// decodes it into a struct or map ("Can't convert x(string) to
// config.ContainerdConfig"), and every generated value must keep its value,
// since it stands for a structured field that the patch would silently
// contradict. The first problem is returned as a *PatchError.
func checkPatch(base, merged map[string]any, c *machineadm.Containerd) error {
	tables, leaves := generated(base)
	for _, t := range tables {
		if v, _ := lookupPath(merged, t.path); v != nil {
			if _, ok := v.(map[string]any); !ok {
				return &PatchError{Key: dotted(t.path), Msg: fmt.Sprintf("replaces a table with %s %s; containerd reads a table here and would refuse config.toml", tomlKind(v), short(v))}
			}
		}
	}
	for _, l := range leaves {
		v, _ := lookupPath(merged, l.path)
		if reflect.DeepEqual(v, l.value) || sameDirUnderRoot(l.path, v) {
			continue
		}
		f := fieldOf(l.path, c)
		return &PatchError{Key: dotted(l.path), Field: f, Msg: fmt.Sprintf("sets %s, contradicting %s, which generates %s; change %s instead",
			short(v), f, short(l.value), f)}
	}
	return nil
}

// sameDirUnderRoot allows config_path to name ConfigPath under another
// root ("/tmp/root/etc/containerd/certs.d"): the hosts.toml files are
// still the registries', seen by a containerd that runs outside the
// machine's root (tests that start a real containerd on a root prefix).
func sameDirUnderRoot(path []string, v any) bool {
	s, ok := v.(string)
	return ok && path[len(path)-1] == "config_path" && strings.HasPrefix(s, "/") && strings.HasSuffix(s, ConfigPath)
}

// fieldOf names the structured field that generated the key at path.
func fieldOf(path []string, c *machineadm.Containerd) string {
	const p = "spec.host.containerd."
	last := path[len(path)-1]
	if i := slices.Index(path, "runtimes"); i >= 0 && len(path) > i+1 {
		name := path[i+1]
		idx := slices.IndexFunc(c.Runtimes, func(r machineadm.Runtime) bool { return r.Name == name })
		rt := fmt.Sprintf("%sruntimes[%d]", p, idx)
		switch {
		case last == "runtime_type" && idx >= 0:
			return rt + ".type"
		case last == "runtime_type":
			return p + "runtimes (machineadm always defines runc as " + RuncType + ")"
		case last == "SystemdCgroup" && (idx < 0 || c.Runtimes[idx].Options["SystemdCgroup"] == nil):
			return p + "cgroupDriver"
		case idx >= 0:
			return rt + ".options." + last
		}
	}
	switch last {
	case "version":
		return p + "configVersion"
	case "config_path":
		return p + "registries (their hosts.toml files are under " + ConfigPath + ")"
	case "sandbox_image", "sandbox":
		return p + "sandboxImage"
	case "restrict_oom_score_adj":
		return p + "restrictOOMScoreAdj"
	case "default_runtime_name":
		return p + "defaultRuntime"
	}
	return p + "(generated key)"
}

// dotted writes a key path as TOML does: bare keys plain, others quoted.
func dotted(path []string) string {
	parts := make([]string, len(path))
	for i, k := range path {
		parts[i] = k
		if k == "" || strings.ContainsFunc(k, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) {
			if q, err := quoteKey(k); err == nil {
				parts[i] = q
			} else {
				parts[i] = fmt.Sprintf("%q", k)
			}
		}
	}
	return strings.Join(parts, ".")
}

// tomlKind names the TOML type of a decoded value.
func tomlKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	case []any:
		return "an array"
	}
	return "a value"
}

// short renders v as TOML for a message, cut to 80 bytes.
func short(v any) string {
	if v == nil {
		return "nothing (the key is gone)"
	}
	out, err := toml.Marshal(map[string]any{"v": v})
	s := strings.TrimSpace(strings.TrimPrefix(string(out), "v = "))
	if err != nil || strings.Contains(s, "\n") {
		s = fmt.Sprintf("%v", v)
	}
	if len(s) > 80 {
		s = strings.ToValidUTF8(s[:80], "") + "…"
	}
	return s
}

// Validate renders config.toml for c in the schema version it will be
// written in (c.ConfigVersion; both 2 and 3 when it is 0, chosen on the
// machine) and returns each configPatch problem (*PatchError: a replaced
// generated table, a contradicted structured field) as a field error at
// spec.host.containerd.configPatch, without touching anything. A nil c is
// valid. `config validate` and the pre-run input check call it, so that a
// breaking patch is bad input (exit 2) before any host phase runs; the
// installed containerd's own loader (VerifyConfig) runs later, in
// host-check.
func Validate(c *machineadm.Containerd) field.ErrorList {
	if c == nil || c.ConfigPatch == "" {
		return nil
	}
	versions := []int{c.ConfigVersion}
	if c.ConfigVersion == 0 {
		versions = []int{2, 3}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, v := range versions {
		if _, ok := schemas[v]; !ok {
			continue // refused by validation of configVersion
		}
		_, err := Tree(c, v)
		var pe *PatchError
		if errors.As(err, &pe) && pe.Schema && c.ConfigVersion == 0 {
			continue // decided by the installed containerd, in host-check
		}
		if errors.As(err, &pe) && !seen[pe.Key+pe.Msg] {
			seen[pe.Key+pe.Msg] = true
			msg := pe.Key + ": " + pe.Msg
			if c.ConfigVersion == 0 {
				msg = fmt.Sprintf("in config version %d (containerd %d.x): %s", v, v-1, msg)
			}
			errs = append(errs, field.Invalid(field.NewPath("spec", "host", "containerd", "configPatch"), "<toml>", msg))
		}
	}
	return errs
}
