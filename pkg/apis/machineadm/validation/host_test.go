package validation

import (
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// TestValidateHostPrep covers the host-preparation rules of host.go.
func TestValidateHostPrep(t *testing.T) {
	cd := func(fn func(c *machineadm.Containerd)) func(c *spec) {
		return func(c *spec) { fn(c.Spec.Host.Containerd) }
	}
	const p = "spec.host.containerd."
	runCases(t, []vcase{
		{name: "sysctl value with newline", base: worker, mutate: func(c *spec) { c.Spec.Host.Sysctl["net.ipv4.ip_forward"] = "1\nkernel.x = 2" }, want: []fe{{"spec.host.sysctl[net.ipv4.ip_forward]", inv}}},
		{name: "sysctl value empty", base: worker, mutate: func(c *spec) { c.Spec.Host.Sysctl["net.ipv4.ip_forward"] = " " }, want: []fe{{"spec.host.sysctl[net.ipv4.ip_forward]", req}}},
		{name: "sysctl value with spaces ok", base: worker, mutate: func(c *spec) { c.Spec.Host.Sysctl["net.ipv4.ip_local_port_range"] = "20000 60999" }},
		// A secret (owner-only) file appended to by a later entry that
		// makes it readable by others, or gives it to another owner: the
		// host keeps the last entry's mode and owner for the whole file.
		{name: "append widens an owner-only file", base: worker, mutate: func(c *spec) {
			c.Spec.Host.Files = []machineadm.File{
				{Path: "/etc/app/key", Content: "secret", Mode: "0600", Owner: "0", Group: "0"},
				{Path: "/etc/app/key", Content: "more", Mode: "0644", Owner: "0", Group: "0", Append: true},
				{Path: "/etc/app/key", Content: "again", Mode: "600", Owner: "1000", Group: "0", Append: true},
			}
		}, want: []fe{{"spec.host.files[1].mode", inv}, {"spec.host.files[2].owner", inv}}},
		{name: "a readable file appended to by an owner-only entry ok", base: worker, mutate: func(c *spec) {
			c.Spec.Host.Files = []machineadm.File{
				{Path: "/etc/app/conf", Content: "public\n", Mode: "0644", Owner: "0", Group: "0"},
				{Path: "/etc/app/conf", Content: "secret\n", Mode: "0600", Owner: "0", Group: "0", Append: true},
				{Path: "/etc/app/conf", Content: "more\n", Mode: "400", Owner: "0", Group: "0", Append: true},
			}
		}},
		{name: "file is the root", base: worker, mutate: func(c *spec) { c.Spec.Host.Files[0].Path = "/" }, want: []fe{{"spec.host.files[0].path", inv}}},
		{name: "encoding with source", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[1]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "https://files.example/x", SHA256: validCertKey}
		}, want: []fe{{"spec.host.files[1].encoding", forb}}},
		{name: "file URL with a host", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "file://server/x", SHA256: validCertKey}
		}, want: []fe{{"spec.host.files[0].source.url", inv}}},
		// Accepted, it failed only in host-check, as PayloadUnavailable
		// ("path escapes the root"), with a hint about proxies and DNS.
		{name: "file URL with '..'", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "file:///opt/bin/../%2e%2e/etc/shadow", SHA256: validCertKey}
		}, want: []fe{{"spec.host.files[0].source.url", inv}}},
		// Accepted, it failed only in host-check, as PayloadUnavailable
		// ("\"\": path escapes the root (not absolute)").
		{name: "file URL of localhost without a path", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "file://localhost", SHA256: validCertKey}
		}, want: []fe{{"spec.host.files[0].source.url", inv}}},
		{name: "file URL of localhost ok", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "file://localhost/opt/bin/tool", SHA256: validCertKey}
		}},
		// The root directory is no file: accepted, it failed only in
		// host-check, as PayloadUnavailable ("/ is not a regular file").
		{name: "file URL of the root directory", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "file:///", SHA256: validCertKey}
		}, want: []fe{{"spec.host.files[0].source.url", inv}}},
		{name: "file URL of localhost's root directory", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "file://localhost/./", SHA256: validCertKey}
		}, want: []fe{{"spec.host.files[0].source.url", inv}}},
		// RFC 8089's "localhost" is case-insensitive, as every host
		// name is: it was refused as another host.
		{name: "file URL of LOCALHOST ok", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "file://LocalHost/opt/bin/tool", SHA256: validCertKey}
		}},
		{name: "file URL ok", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "file:///opt/bin/..x/tool", SHA256: validCertKey}
		}},
		{name: "sandbox image", base: worker, mutate: cd(func(c *machineadm.Containerd) { c.SandboxImage = "Registry.k8s.io/Pause:3.10" }), want: []fe{{p + "sandboxImage", inv}}},
		{name: "cgroup driver differs from kubelet's", base: worker, mutate: func(c *spec) {
			c.Spec.Node.Kubelet.Config["cgroupDriver"] = "cgroupfs"
		}, want: []fe{{p + "cgroupDriver", inv}}},
		{name: "registry client cert without key", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.Registries[0].ClientCert = c.Registries[0].CACert
		}), want: []fe{{p + "registries[0].clientKey", req}}},
		{name: "registry client key not PEM", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.Registries[0].ClientCert, c.Registries[0].ClientKey = c.Registries[0].CACert, "secret-key-material"
		}), want: []fe{{p + "registries[0].clientKey", inv}}, secret: "secret-key-material"},
		{name: "proxy", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.Proxy = &machineadm.Proxy{HTTPProxy: "proxy.example:3128", HTTPSProxy: "http://u:pw@proxy.example:3128\"\nX=1", NoProxy: "a, b"}
		}), want: []fe{{p + "proxy.httpProxy", inv}, {p + "proxy.httpsProxy", inv}, {p + "proxy.noProxy", inv}}, secret: "pw@"},
		{name: "proxy port out of range", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.Proxy = &machineadm.Proxy{HTTPProxy: "http://u:pw@proxy.example:99999", HTTPSProxy: "socks5://proxy.example:0"}
		}), want: []fe{{p + "proxy.httpProxy", inv}, {p + "proxy.httpsProxy", inv}}, secret: "pw@"},
		{name: "proxy ok", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.Proxy = &machineadm.Proxy{HTTPProxy: "http://proxy.example:3128", NoProxy: "10.0.0.0/8,.svc"}
		})},
		{name: "runc options", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.Runtimes = append(c.Runtimes,
				machineadm.Runtime{Name: "runc", Type: "io.containerd.runc.v2", Options: map[string]any{"SystemdCGroup": true, "NoNewKeyring": "yes", "IoUid": float64(-1), "BinaryName": "/usr/bin/runc"}},
				machineadm.Runtime{Name: "nvidia", Type: "io.containerd.runc.v2", Options: map[string]any{"BinaryName": "/usr/bin/nvidia-container-runtime", "IoGid": float64(0)}})
		}), want: []fe{{p + "runtimes[1].options[SystemdCGroup]", nsup}, {p + "runtimes[1].options[NoNewKeyring]", inv}, {p + "runtimes[1].options[IoUid]", inv}}},
		{name: "other shims' options are theirs", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.Runtimes[0].Options = map[string]any{"ConfigPath": "/opt/kata/configuration.toml"}
		})},
		{name: "default runtime", base: worker, mutate: cd(func(c *machineadm.Containerd) { c.DefaultRuntime = "gvisor" }), want: []fe{{p + "defaultRuntime", inv}}},
		{name: "default runtime from runtimes", base: worker, mutate: cd(func(c *machineadm.Containerd) { c.DefaultRuntime = "kata" })},
		{name: "configPatch sets version", base: worker, mutate: cd(func(c *machineadm.Containerd) { c.ConfigPatch = "version = 3\n" }), want: []fe{{p + "configPatch", forb}}},
		{name: "configPatch with credentials warns", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.ConfigPatch = "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"r.example\".auth]\nusername = \"u\"\n"
		}), warn: []string{p + "configPatch"}},
	})
}
