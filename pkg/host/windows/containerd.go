package windows

import (
	"bytes"
	"fmt"

	"github.com/pelletier/go-toml/v2"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/containerd"
)

// containerd's Windows locations (containerd defaults/defaults_windows.go
// and its Windows install layout).
const (
	// ContainerdRoot and ContainerdState are containerd's root and state
	// directories.
	ContainerdRoot  = `C:\ProgramData\containerd\root`
	ContainerdState = `C:\ProgramData\containerd\state`
	// ContainerdPipe is the gRPC (and CRI) named pipe; the CRI endpoint
	// is "npipe:" + this with slashes: npipe:////./pipe/containerd-containerd.
	ContainerdPipe = `\\.\pipe\containerd-containerd`
	// CNIBinDir and CNIConfDir are where the CNI plugins and their
	// configuration go.
	CNIBinDir  = `C:\Program Files\containerd\cni\bin`
	CNIConfDir = `C:\Program Files\containerd\cni\conf`
	// RegistryConfigPath is config_path, the hosts.toml directory.
	RegistryConfigPath = `C:\Program Files\containerd\certs.d`
	// RunhcsType is hcsshim's shim, the Windows runtime_type.
	RunhcsType = "io.containerd.runhcs.v1"
	// ProcessRuntime is the handler of process-isolated containers.
	ProcessRuntime = "runhcs-wcow-process"
)

// ContainerdConfig renders containerd's config.toml for Windows from
// spec.host.containerd in schema version 2 (containerd 1.7) or 3
// (containerd 2.x): root, state and the named pipe; the CRI plugin
// tables of that version with the runhcs-wcow-process runtime (plus the
// spec's runtimes, for example runhcs-wcow-hypervisor with
// "SandboxIsolation": 1), CNI directories, config_path for hosts.toml
// and the sandbox image; then ConfigPatch deep-merged. CgroupDriver and
// RestrictOOMScoreAdj do not apply on Windows and are left out.
func ContainerdConfig(c *machineadm.Containerd, version int) ([]byte, error) {
	var runtimeTable, imagesTable string
	switch version {
	case 2:
		runtimeTable, imagesTable = "io.containerd.grpc.v1.cri", "io.containerd.grpc.v1.cri"
	case 3:
		runtimeTable, imagesTable = "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images"
	default:
		return nil, fmt.Errorf("containerd config version %d is not supported (2 or 3)", version)
	}
	runtimes := map[string]any{ProcessRuntime: map[string]any{"runtime_type": RunhcsType}}
	for _, r := range c.Runtimes {
		typ := r.Type
		if typ == "" {
			typ = RunhcsType
		}
		e := map[string]any{"runtime_type": typ}
		if len(r.Options) > 0 {
			e["options"] = jsonNumbers(r.Options)
		}
		runtimes[r.Name] = e
	}
	def := c.DefaultRuntime
	if def == "" || def == "runc" {
		def = ProcessRuntime
	}
	rt := map[string]any{
		"containerd": map[string]any{"default_runtime_name": def, "runtimes": runtimes},
		"cni":        map[string]any{"bin_dir": CNIBinDir, "conf_dir": CNIConfDir},
	}
	img := rt
	if imagesTable != runtimeTable {
		img = map[string]any{}
	}
	img["registry"] = map[string]any{"config_path": RegistryConfigPath}
	if c.SandboxImage != "" {
		if version == 2 {
			img["sandbox_image"] = c.SandboxImage
		} else {
			img["pinned_images"] = map[string]any{"sandbox": c.SandboxImage}
		}
	}
	plugins := map[string]any{runtimeTable: rt, imagesTable: img}
	tree := map[string]any{
		"version": int64(version),
		"root":    ContainerdRoot,
		"state":   ContainerdState,
		"grpc":    map[string]any{"address": ContainerdPipe},
		"plugins": plugins,
	}
	if c.ConfigPatch != "" {
		var patch map[string]any
		if err := toml.Unmarshal([]byte(c.ConfigPatch), &patch); err != nil {
			return nil, fmt.Errorf("spec.host.containerd.configPatch: %w", err)
		}
		containerd.DeepMerge(tree, patch)
	}
	var b bytes.Buffer
	b.WriteString(containerd.Header)
	if err := toml.NewEncoder(&b).SetIndentTables(true).Encode(tree); err != nil {
		return nil, fmt.Errorf("encoding config.toml: %w", err)
	}
	return b.Bytes(), nil
}

// jsonNumbers turns integral float64 values (JSON's only number) into
// int64, so that options such as SandboxIsolation = 1 stay integers.
func jsonNumbers(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case float64:
			if x == float64(int64(x)) {
				out[k] = int64(x)
				continue
			}
		case map[string]any:
			out[k] = jsonNumbers(x)
			continue
		}
		out[k] = v
	}
	return out
}
