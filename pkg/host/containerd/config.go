// Package containerd renders containerd's configuration from the spec's
// structured settings (spec.host.containerd): config.toml in schema
// version 2 (containerd 1.6/1.7) or 3 (containerd 2.x) written with
// go-toml/v2, hosts.toml directories under config_path for registries, a
// systemd drop-in for the proxy, and detection of the installed
// containerd's version. Everything here is pure except DetectVersion.
package containerd

import (
	"bytes"
	"fmt"
	"maps"
	"math"

	"github.com/pelletier/go-toml/v2"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Fixed paths and names.
const (
	// ConfigPath is config_path, the directory of hosts.toml files
	// (containerd docs/hosts.md).
	ConfigPath = "/etc/containerd/certs.d"
	// Unit is the systemd unit restarted after a configuration change.
	Unit = "containerd.service"
	// RuncType is the runc shim, the default runtime_type.
	RuncType = "io.containerd.runc.v2"
)

// Header is the comment at the top of the generated config.toml.
const Header = "# Written by machineadm from spec.host.containerd; do not edit, change the machine spec instead.\n"

// schema holds the table names that differ between config versions.
type schema struct {
	// runtime is the CRI runtime plugin table (restrict_oom_score_adj,
	// containerd.runtimes).
	runtime string
	// images is the CRI image plugin table (registry.config_path).
	images string
}

var schemas = map[int]schema{
	2: {runtime: "io.containerd.grpc.v1.cri", images: "io.containerd.grpc.v1.cri"},
	3: {runtime: "io.containerd.cri.v1.runtime", images: "io.containerd.cri.v1.images"},
}

// Render returns config.toml for c in schema version (2 or 3):
//
//   - version 2 (containerd 1.x): everything under
//     [plugins."io.containerd.grpc.v1.cri"]; sandbox_image there.
//   - version 3 (containerd 2.x): runtimes and restrict_oom_score_adj
//     under [plugins."io.containerd.cri.v1.runtime"], registry and
//     pinned_images.sandbox under [plugins."io.containerd.cri.v1.images"].
//
// Both get registry.config_path = ConfigPath, default_runtime_name,
// a runc runtime with SystemdCgroup from CgroupDriver, one runtime per
// spec entry (an entry named "runc" adds options to runc), and finally
// ConfigPatch deep-merged over the result (tables merge key by key;
// other values, arrays included, are replaced). Keys come out sorted.
//
// A patch may add keys and tables, and change keys machineadm does not
// generate. It may not replace a generated table with another kind of
// value (containerd would refuse the file), nor change a generated value
// (SystemdCgroup against cgroupDriver, registry.config_path against the
// registries' hosts.toml, sandbox_image against sandboxImage, ...): both
// are a *PatchError naming configPatch, the key and the structured field.
// Nor may it use a key of the other config version's schema, which
// containerd would silently ignore (a version-2 plugins."io.containerd.
// grpc.v1.cri".containerd table in a version-3 file): a *PatchError with
// Schema set, naming where the key belongs in this version.
func Render(c *machineadm.Containerd, version int) ([]byte, error) {
	tree, err := Tree(c, version)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(Header)
	enc := toml.NewEncoder(&b).SetIndentTables(true)
	if err := enc.Encode(tree); err != nil {
		return nil, fmt.Errorf("encoding config.toml: %w", err)
	}
	return b.Bytes(), nil
}

// Tree returns the configuration as a TOML tree (nested maps), before
// encoding; see Render.
func Tree(c *machineadm.Containerd, version int) (map[string]any, error) {
	sc, ok := schemas[version]
	if !ok {
		return nil, fmt.Errorf("containerd config version %d is not supported (2 or 3)", version)
	}
	rt := map[string]any{}
	img := rt
	if sc.images != sc.runtime {
		img = map[string]any{}
	}
	if c.RestrictOOMScoreAdj {
		rt["restrict_oom_score_adj"] = true
	}
	if c.SandboxImage != "" {
		if version == 2 {
			img["sandbox_image"] = c.SandboxImage
		} else {
			img["pinned_images"] = map[string]any{"sandbox": c.SandboxImage}
		}
	}
	img["registry"] = map[string]any{"config_path": ConfigPath}
	def := c.DefaultRuntime
	if def == "" {
		def = "runc"
	}
	rt["containerd"] = map[string]any{
		"default_runtime_name": def,
		"runtimes":             runtimes(c),
	}
	plugins := map[string]any{sc.runtime: rt}
	plugins[sc.images] = img
	tree := map[string]any{"version": int64(version), "plugins": plugins}
	if c.ConfigPatch != "" {
		var patch map[string]any
		if err := toml.Unmarshal([]byte(c.ConfigPatch), &patch); err != nil {
			return nil, fmt.Errorf("%s: %w", PatchField, err)
		}
		if err := checkPatchSchema(patch, version); err != nil {
			return nil, err
		}
		base, _ := deepCopy(tree).(map[string]any)
		DeepMerge(tree, patch)
		if err := checkPatch(base, tree, c); err != nil {
			return nil, err
		}
	}
	return tree, nil
}

// runtimes returns containerd.runtimes: runc first with SystemdCgroup,
// then the spec's runtimes. Every runtime of type io.containerd.runc.v2
// gets SystemdCgroup from the cgroup driver unless its options set it.
func runtimes(c *machineadm.Containerd) map[string]any {
	systemd := c.CgroupDriver != "cgroupfs"
	out := map[string]any{
		"runc": map[string]any{"runtime_type": RuncType, "options": map[string]any{}},
	}
	for _, r := range c.Runtimes {
		typ := r.Type
		if typ == "" {
			typ = RuncType
		}
		entry, _ := out[r.Name].(map[string]any)
		if entry == nil {
			entry = map[string]any{"options": map[string]any{}}
			out[r.Name] = entry
		}
		entry["runtime_type"] = typ
		opts := entry["options"].(map[string]any)
		maps.Copy(opts, normalize(r.Options).(map[string]any))
	}
	for _, v := range out {
		entry := v.(map[string]any)
		opts := entry["options"].(map[string]any)
		if entry["runtime_type"] == RuncType {
			if _, set := opts["SystemdCgroup"]; !set {
				opts["SystemdCgroup"] = systemd
			}
		}
		if len(opts) == 0 {
			delete(entry, "options")
		}
	}
	return out
}

// normalize converts values decoded from JSON into TOML-friendly ones:
// integral float64 numbers become int64 (JSON has one number type; TOML
// and containerd's option structs tell integers from floats), nested
// maps and lists are converted recursively. A nil map gives an empty one.
func normalize(v any) any {
	switch t := v.(type) {
	case nil:
		return map[string]any{}
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t)
		}
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if e == nil {
				continue
			}
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

// deepCopy copies nested tables and arrays.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// DeepMerge merges patch into base in place: where both hold a table the
// merge recurses; otherwise the patch's value replaces the base's. Unlike
// containerd's own imports, which replace whole top-level sections, only
// the keys the patch names change.
func DeepMerge(base, patch map[string]any) {
	for k, pv := range patch {
		pm, pIsMap := pv.(map[string]any)
		bm, bIsMap := base[k].(map[string]any)
		if pIsMap && bIsMap {
			DeepMerge(bm, pm)
			continue
		}
		if pIsMap {
			cp := map[string]any{}
			DeepMerge(cp, pm)
			base[k] = cp
			continue
		}
		base[k] = pv
	}
}

// Imports says whether a rendered config.toml names other files in its
// top-level imports (set through configPatch): containerd's loader then
// reads those too, so what it makes of config is not a function of
// config's bytes alone. A config that does not decode imports nothing.
func Imports(config []byte) bool {
	var top struct {
		Imports []string `toml:"imports"`
	}
	if toml.Unmarshal(config, &top) != nil {
		return false
	}
	return len(top.Imports) > 0
}
