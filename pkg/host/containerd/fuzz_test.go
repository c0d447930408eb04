package containerd

import (
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// FuzzConfigPatch renders config.toml with an arbitrary configPatch, both
// cgroup drivers and both schema versions. Render must never panic; a
// refused patch is an error naming spec.host.containerd.configPatch; a
// rendered config.toml decodes as TOML and keeps what machineadm generated
// from structured fields (the runc cgroup driver, the registries'
// config_path). Seeds: the golden specs' patches and the regression inputs
// under testdata/fuzz/FuzzConfigPatch. CI runs it briefly (make
// fuzz-short).
func FuzzConfigPatch(f *testing.F) {
	for _, v := range []int{2, 3} {
		f.Add(fullSpec(v).ConfigPatch, true, v == 3)
	}
	f.Add("[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nruntimes = \"x\"\n", true, false)
	f.Add("[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\nSystemdCgroup = false\n", true, false)
	f.Add("[plugins.\"io.containerd.cri.v1.images\".registry]\nconfig_path = \"/elsewhere\"\n", false, true)
	f.Add("version = 2\nplugins = 1\n", false, false)
	f.Add("[a]\nb = 1979-05-27T07:32:00Z\nc = [1, \"x\", {d = 1}]\ne = inf\n", true, false)
	f.Fuzz(func(t *testing.T, patch string, systemd, v3 bool) {
		version := 2
		if v3 {
			version = 3
		}
		driver := "cgroupfs"
		if systemd {
			driver = "systemd"
		}
		c := &machineadm.Containerd{CgroupDriver: driver, SandboxImage: "registry.k8s.io/pause:3.10", ConfigPatch: patch,
			Runtimes: []machineadm.Runtime{{Name: "kata", Type: "io.containerd.kata.v2"}}}
		out, err := Render(c, version)
		if err != nil {
			if !strings.Contains(err.Error(), "spec.host.containerd.configPatch") {
				t.Fatalf("refused without naming configPatch: %v", err)
			}
			return
		}
		var tree map[string]any
		if err := toml.Unmarshal(out, &tree); err != nil {
			t.Fatalf("rendered config.toml does not decode: %v\n%s", err, out)
		}
		sc := schemas[version]
		runc, _ := dig(tree, "plugins", sc.runtime, "containerd", "runtimes", "runc", "options").(map[string]any)
		if runc == nil || runc["SystemdCgroup"] != systemd {
			t.Fatalf("runc SystemdCgroup is %v with cgroupDriver %s:\n%s", runc, driver, out)
		}
		if p := dig(tree, "plugins", sc.images, "registry", "config_path"); p != ConfigPath && !sameDirUnderRoot([]string{"config_path"}, p) {
			t.Fatalf("config_path is %v, want %s:\n%s", p, ConfigPath, out)
		}
		if v := dig(tree, "version"); v != int64(version) {
			t.Fatalf("version is %v, want %d", v, version)
		}
	})
}

// dig follows keys through nested tables; nil when one is missing.
func dig(tree map[string]any, keys ...string) any {
	var v any = tree
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// FuzzHostsFiles renders hosts.toml for one registry with an arbitrary
// host, server and mirror. HostsFiles must never panic; each hosts.toml it
// writes decodes as TOML, names the server it was given (https://HOST by
// default) and keeps the mirror URL as its table key, byte for byte.
func FuzzHostsFiles(f *testing.F) {
	f.Add("docker.io", "https://registry-1.docker.io", "https://mirror.example.com/v2", "pull,resolve", true)
	f.Add("registry.example.com:5000", "", "http://10.0.0.1:5000", "", false)
	f.Add("a\"b", "x\ny", "https://m.example/\"]\n[evil]", "pull", false)
	f.Fuzz(func(t *testing.T, host, server, mirror, caps string, skip bool) {
		reg := machineadm.Registry{Host: host, Server: server, SkipVerify: skip, CACert: testCert,
			Mirrors: []machineadm.Mirror{{URL: mirror, Capabilities: strings.Split(caps, ","), ClientCert: testCert, ClientKey: testKey}}}
		files, err := HostsFiles([]machineadm.Registry{reg})
		if err != nil {
			return
		}
		var hosts []File
		for _, f := range files {
			if strings.HasSuffix(f.Path, "/hosts.toml") {
				hosts = append(hosts, f)
			}
		}
		if len(hosts) != 1 {
			t.Fatalf("%d hosts.toml files", len(hosts))
		}
		var doc struct {
			Server string                    `toml:"server"`
			Host   map[string]map[string]any `toml:"host"`
		}
		if err := toml.Unmarshal(hosts[0].Content, &doc); err != nil {
			t.Fatalf("hosts.toml does not decode: %v\n%s", err, hosts[0].Content)
		}
		want := server
		if want == "" {
			want = "https://" + host
		}
		if doc.Server != want {
			t.Fatalf("server %q, want %q", doc.Server, want)
		}
		if _, ok := doc.Host[mirror]; !ok || len(doc.Host) != 1 {
			t.Fatalf("mirror tables %v, want only %q", doc.Host, mirror)
		}
	})
}
