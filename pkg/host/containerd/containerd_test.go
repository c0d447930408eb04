package containerd

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fullSpec sets every containerd field that shapes config.toml, with a
// patch for the given schema version that adds top-level keys, overrides
// a generated one and adds a sibling to a generated table.
func fullSpec(version int) *machineadm.Containerd {
	cri := map[int]string{2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.runtime"}[version]
	return &machineadm.Containerd{
		ConfigFile:          "/etc/containerd/config.toml",
		CgroupDriver:        "systemd",
		SandboxImage:        "registry.k8s.io/pause:3.10",
		RestrictOOMScoreAdj: true,
		DefaultRuntime:      "runc",
		Runtimes: []machineadm.Runtime{
			{Name: "runc", Type: RuncType, Options: map[string]any{"NoNewKeyring": true}},
			{Name: "nvidia", Type: RuncType, Options: map[string]any{"BinaryName": "/usr/bin/nvidia-container-runtime", "IoUid": float64(0)}},
			{Name: "kata", Type: "io.containerd.kata.v2"},
		},
		ConfigPatch: `
oom_score = -999
[grpc]
  max_recv_message_size = 33554432
[plugins."` + cri + `".containerd]
  snapshotter = "overlayfs"
`,
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestRenderGolden(t *testing.T) {
	for _, v := range []int{2, 3} {
		got, err := Render(fullSpec(v), v)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, map[int]string{2: "config-v2.toml", 3: "config-v3.toml"}[v], got)
	}
}

// lookup walks a decoded TOML tree.
func lookup(t *testing.T, tree map[string]any, path ...string) any {
	t.Helper()
	var cur any = tree
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%v: %q is not a table", path, p)
		}
		cur = m[p]
	}
	return cur
}

func TestRenderKeysPerVersion(t *testing.T) {
	for _, tc := range []struct {
		version         int
		runtime, images string
		sandbox         []string
	}{
		{2, "io.containerd.grpc.v1.cri", "io.containerd.grpc.v1.cri", []string{"sandbox_image"}},
		{3, "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images", []string{"pinned_images", "sandbox"}},
	} {
		out, err := Render(fullSpec(tc.version), tc.version)
		if err != nil {
			t.Fatal(err)
		}
		var tree map[string]any
		if err := toml.Unmarshal(out, &tree); err != nil {
			t.Fatalf("v%d: not TOML: %v", tc.version, err)
		}
		if lookup(t, tree, "version") != int64(tc.version) {
			t.Errorf("v%d: version = %v", tc.version, tree["version"])
		}
		rt := []string{"plugins", tc.runtime}
		checks := map[string]struct {
			path []string
			want any
		}{
			"oom":       {append(rt, "restrict_oom_score_adj"), true},
			"systemd":   {append(rt, "containerd", "runtimes", "runc", "options", "SystemdCgroup"), true},
			"keyring":   {append(rt, "containerd", "runtimes", "runc", "options", "NoNewKeyring"), true},
			"runc type": {append(rt, "containerd", "runtimes", "runc", "runtime_type"), RuncType},
			"nvidia":    {append(rt, "containerd", "runtimes", "nvidia", "options", "BinaryName"), "/usr/bin/nvidia-container-runtime"},
			"nv cgroup": {append(rt, "containerd", "runtimes", "nvidia", "options", "SystemdCgroup"), true},
			"nv int":    {append(rt, "containerd", "runtimes", "nvidia", "options", "IoUid"), int64(0)},
			"kata":      {append(rt, "containerd", "runtimes", "kata", "runtime_type"), "io.containerd.kata.v2"},
			"kata opts": {append(rt, "containerd", "runtimes", "kata", "options"), nil},
			"default":   {append(rt, "containerd", "default_runtime_name"), "runc"},
			"hosts dir": {[]string{"plugins", tc.images, "registry", "config_path"}, ConfigPath},
			"sandbox":   {append([]string{"plugins", tc.images}, tc.sandbox...), "registry.k8s.io/pause:3.10"},
			"patch":     {[]string{"oom_score"}, int64(-999)},
			"patch tbl": {[]string{"grpc", "max_recv_message_size"}, int64(33554432)},
			"sibling":   {append(rt, "containerd", "snapshotter"), "overlayfs"},
		}
		for name, c := range checks {
			if got := lookup(t, tree, c.path...); got != c.want {
				t.Errorf("v%d %s: %v = %#v, want %#v", tc.version, name, c.path, got, c.want)
			}
		}
	}
}

func TestCgroupfsDriver(t *testing.T) {
	c := fullSpec(2)
	c.CgroupDriver = "cgroupfs"
	c.Runtimes = nil
	out, err := Render(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "SystemdCgroup = false") {
		t.Errorf("cgroupfs: want SystemdCgroup = false in\n%s", out)
	}
}

func TestDeepMergeIsARealMerge(t *testing.T) {
	base := map[string]any{
		"plugins": map[string]any{"cri": map[string]any{"a": 1, "keep": "yes", "list": []any{1, 2}}},
		"top":     "base",
	}
	patch := map[string]any{
		"plugins": map[string]any{"cri": map[string]any{"a": 2, "list": []any{3}, "new": map[string]any{"x": true}}},
		"other":   map[string]any{"y": 1},
	}
	DeepMerge(base, patch)
	cri := base["plugins"].(map[string]any)["cri"].(map[string]any)
	if cri["a"] != 2 || cri["keep"] != "yes" || len(cri["list"].([]any)) != 1 || cri["new"].(map[string]any)["x"] != true {
		t.Errorf("merged cri = %#v", cri)
	}
	if base["top"] != "base" || base["other"].(map[string]any)["y"] != 1 {
		t.Errorf("merged top level = %#v", base)
	}
}

// TestPatchMayNotBreakOrContradict: a patch that replaces a generated
// table with another kind of value (containerd would refuse the file:
// "Can't convert x(string) to config.ContainerdConfig"), or changes a value
// machineadm generated from a structured field, is a *PatchError naming
// configPatch, the key and the field. Setting a generated value to what it
// already is, and adding keys beside generated ones, stays allowed.
func TestPatchMayNotBreakOrContradict(t *testing.T) {
	cri2 := `[plugins."io.containerd.grpc.v1.cri"`
	cri3 := `[plugins."io.containerd.cri.v1.runtime"`
	img3 := `[plugins."io.containerd.cri.v1.images"`
	base := machineadm.Containerd{CgroupDriver: "systemd", SandboxImage: "registry.k8s.io/pause:3.10", RestrictOOMScoreAdj: true,
		Runtimes: []machineadm.Runtime{{Name: "kata", Type: "io.containerd.kata.v2"}, {Name: "gvisor", Type: RuncType, Options: map[string]any{"SystemdCgroup": false}}}}
	for _, c := range []struct {
		version    int
		patch      string
		key, field string // want; empty field: a type problem
	}{
		{2, cri2 + "]\ncontainerd = \"x\"\n", `plugins.'io.containerd.grpc.v1.cri'.containerd`, ""},
		{3, cri3 + ".containerd]\nruntimes = 1\n", `plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes`, ""},
		{2, "plugins = []\n", "plugins", ""},
		{2, cri2 + ".containerd.runtimes.runc.options]\nSystemdCgroup = false\n", "SystemdCgroup", "spec.host.containerd.cgroupDriver"},
		{3, cri3 + ".containerd.runtimes.gvisor.options]\nSystemdCgroup = true\n", "SystemdCgroup", "spec.host.containerd.runtimes[1].options.SystemdCgroup"},
		{2, cri2 + ".registry]\nconfig_path = \"/etc/docker/certs.d\"\n", "config_path", "spec.host.containerd.registries"},
		{3, img3 + ".registry]\nconfig_path = \"\"\n", "config_path", "spec.host.containerd.registries"},
		{2, cri2 + "]\nsandbox_image = \"pause:3.9\"\n", "sandbox_image", "spec.host.containerd.sandboxImage"},
		{3, img3 + ".pinned_images]\nsandbox = \"pause:3.9\"\n", "sandbox", "spec.host.containerd.sandboxImage"},
		{2, cri2 + "]\nrestrict_oom_score_adj = false\n", "restrict_oom_score_adj", "spec.host.containerd.restrictOOMScoreAdj"},
		{2, cri2 + ".containerd]\ndefault_runtime_name = \"kata\"\n", "default_runtime_name", "spec.host.containerd.defaultRuntime"},
		{2, cri2 + ".containerd.runtimes.kata]\nruntime_type = \"io.containerd.runsc.v1\"\n", "runtime_type", "spec.host.containerd.runtimes[0].type"},
	} {
		spec := base
		spec.ConfigPatch = c.patch
		_, err := Render(&spec, c.version)
		var pe *PatchError
		if !errors.As(err, &pe) {
			t.Errorf("v%d %q: %v, want a PatchError", c.version, c.patch, err)
			continue
		}
		if !strings.HasSuffix(pe.Key, c.key) || pe.Field != c.field && !strings.HasPrefix(pe.Field, c.field+" ") {
			t.Errorf("v%d %q: key %q field %q, want %q and %q", c.version, c.patch, pe.Key, pe.Field, c.key, c.field)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "spec.host.containerd.configPatch: ") || !strings.Contains(msg, c.field) {
			t.Errorf("message %q names neither configPatch nor %s", msg, c.field)
		}
	}
	for _, ok := range []string{
		cri2 + ".containerd.runtimes.runc.options]\nSystemdCgroup = true\nNoNewKeyring = true\n",
		cri2 + ".containerd]\nsnapshotter = \"overlayfs\"\n" + cri2 + ".cni]\nbin_dir = \"/opt/cni/bin\"\n",
		cri2 + ".containerd.runtimes.extra]\nruntime_type = \"io.containerd.runc.v2\"\n",
	} {
		spec := base
		spec.ConfigPatch = ok
		if _, err := Render(&spec, 2); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

func TestRenderRefusesUnknownVersion(t *testing.T) {
	if _, err := Render(fullSpec(2), 1); err == nil {
		t.Error("version 1: want error")
	}
}

func TestConfigVersionFor(t *testing.T) {
	for out, want := range map[string]int{
		"containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3\n":                    2,
		"containerd github.com/containerd/containerd v1.7.24 88bf19b2105c8b17560993bee28a01ddc2f97182\n":   2,
		"containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7193e4e490e9fbdc236c0e811ccaba3376\n": 3,
		"containerd containerd.io 2.0.0 207ad711eabd375a01713109a8a197d197ff6542\n":                        3,
	} {
		if got, err := ConfigVersionFor(out); err != nil || got != want {
			t.Errorf("ConfigVersionFor(%q) = %d, %v; want %d", out, got, err, want)
		}
	}
	if _, err := ConfigVersionFor("containerd: command not found"); err == nil {
		t.Error("no version: want error")
	}
}

func TestValidatePatch(t *testing.T) {
	c := &machineadm.Containerd{CgroupDriver: "systemd", ConfigPatch: "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\nSystemdCgroup = false\n"}
	errs := Validate(c)
	if len(errs) != 1 || errs[0].Field != "spec.host.containerd.configPatch" || !strings.Contains(errs[0].Detail, "cgroupDriver") || !strings.Contains(errs[0].Detail, "config version 2") {
		t.Errorf("Validate = %v, want one error for config version 2 naming cgroupDriver", errs)
	}
	c.ConfigVersion = 3 // a version-2 key, which containerd 2 would ignore
	if errs := Validate(c); len(errs) != 1 || !strings.Contains(errs[0].Detail, `plugins.'io.containerd.cri.v1.runtime'.containerd`) {
		t.Errorf("version 3: %v", errs)
	}
	if errs := Validate(&machineadm.Containerd{}); errs != nil || Validate(nil) != nil {
		t.Error("no patch must be valid")
	}
}

// TestPatchOtherSchemaKeysRefused: a configPatch key of the other config
// version's schema, which containerd ignores without a word, is refused
// for that version, naming the key and where it belongs; with
// configVersion 0 validation leaves it to host-check, which knows the
// installed containerd. A version-2 key in a version-3 file was written
// silently.
func TestPatchOtherSchemaKeysRefused(t *testing.T) {
	for _, tc := range []struct {
		name, patch string
		version     int
		want        string // "" accepted
	}{
		{"v2 runtime table in v3", "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nsnapshotter = \"native\"\n", 3, `plugins.'io.containerd.grpc.v1.cri'.containerd: is a config version 2 key (containerd 1.x); in config version 3 (containerd 2.x) it is plugins.'io.containerd.cri.v1.runtime'.containerd`},
		{"v2 sandbox_image in v3", "[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = \"registry.k8s.io/pause:3.10\"\n", 3, `plugins.'io.containerd.cri.v1.images'.pinned_images.sandbox`},
		{"v2 image key in v3", "[plugins.\"io.containerd.grpc.v1.cri\"]\nmax_concurrent_downloads = 5\n", 3, `plugins.'io.containerd.cri.v1.images'.max_concurrent_downloads`},
		{"removed plugin in v3", "[plugins.\"io.containerd.runtime.v1.linux\"]\nshim_debug = true\n", 3, `no longer has`},
		{"v3 CRI server key in v3", "[plugins.\"io.containerd.grpc.v1.cri\"]\nstream_server_address = \"127.0.0.1\"\n", 3, ""},
		{"v3 runtime key in v3", "[plugins.\"io.containerd.cri.v1.runtime\"]\nenable_selinux = true\n", 3, ""},
		{"v3 plugin in v2", "[plugins.\"io.containerd.cri.v1.images\"]\nmax_concurrent_downloads = 5\n", 2, `is a config version 3 plugin`},
		{"v2 key in v2", "[plugins.\"io.containerd.grpc.v1.cri\"]\nmax_concurrent_downloads = 5\n", 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &machineadm.Containerd{CgroupDriver: "systemd", ConfigVersion: tc.version, ConfigPatch: tc.patch}
			_, err := Render(c, tc.version)
			errs := Validate(c)
			if tc.want == "" {
				if err != nil || len(errs) != 0 {
					t.Errorf("refused: %v %v", err, errs)
				}
				return
			}
			var pe *PatchError
			if !errors.As(err, &pe) || !pe.Schema || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render: %v, want a schema *PatchError saying %q", err, tc.want)
			}
			if len(errs) != 1 || errs[0].Field != "spec.host.containerd.configPatch" || !strings.Contains(errs[0].Detail, tc.want) {
				t.Errorf("Validate = %v", errs)
			}
			c.ConfigVersion = 0
			if errs := Validate(c); len(errs) != 0 {
				t.Errorf("configVersion 0: %v; the installed containerd decides", errs)
			}
		})
	}
}
