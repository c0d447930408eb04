package validation

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

func TestValidateNode(t *testing.T) {
	n := func(f func(n *machineadm.Node)) func(c *spec) {
		return func(c *spec) { f(&c.Spec.Node) }
	}
	const p = "spec.node."
	runCases(t, []vcase{
		{name: "name not DNS", base: worker, mutate: n(func(n *machineadm.Node) { n.Name = "Node_1" }), want: []fe{{p + "name", inv}}},
		{name: "criSocket without scheme", base: worker, mutate: n(func(n *machineadm.Node) { n.CRISocket = "/run/containerd/containerd.sock" }), want: []fe{{p + "criSocket", inv}}},
		{name: "criSocket tcp", base: worker, mutate: n(func(n *machineadm.Node) { n.CRISocket = "tcp://127.0.0.1:1234" }), want: []fe{{p + "criSocket", inv}}},
		// A named pipe is valid for spec.os windows (TestWindowsDefaults).
		{name: "criSocket npipe for spec.os linux", base: worker, mutate: func(c *spec) {
			c.Spec.OS, c.Spec.Node.CRISocket = machineadm.OSLinux, "npipe:////./pipe/containerd-containerd"
		}, want: []fe{{p + "criSocket", inv}}},
		{name: "label key and value", base: worker, mutate: n(func(n *machineadm.Node) {
			n.Labels = map[string]string{"bad key": "v", "example.com/ok": "bad value!"}
		}), want: []fe{{p + "labels[bad key]", inv}, {p + "labels[example.com/ok]", inv}}},
		{name: "labels the kubelet may not set", base: worker, mutate: n(func(n *machineadm.Node) {
			n.Labels = map[string]string{
				"node-role.kubernetes.io/worker": "", "node.k8s.io/x": "1", "kubelet.foo.kubernetes.io/x": "1", "kubernetes.io/role": "w",
			}
		}), want: []fe{{p + "labels[node-role.kubernetes.io/worker]", forb}, {p + "labels[node.k8s.io/x]", forb}, {p + "labels[kubelet.foo.kubernetes.io/x]", forb}, {p + "labels[kubernetes.io/role]", forb}}},
		{name: "labels the kubelet may set", base: worker, mutate: n(func(n *machineadm.Node) {
			n.Labels = map[string]string{
				"node.kubernetes.io/exclude-from-external-load-balancers": "", "kubelet.kubernetes.io/x": "1", "a.node.kubernetes.io/b": "c",
				"beta.kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "z1", "example.com/pool": "p", "plain": "v",
			}
		})},
		{name: "taint fields", base: worker, mutate: n(func(n *machineadm.Node) {
			n.Taints = &[]machineadm.Taint{{Key: "bad key", Effect: "NoSchedule"}, {Key: "example.com/t", Value: "bad value!", Effect: "Never"}}
		}), want: []fe{{p + "taints[0].key", inv}, {p + "taints[1].value", inv}, {p + "taints[1].effect", nsup}}},
		{name: "taint duplicate key and effect", base: worker, mutate: n(func(n *machineadm.Node) {
			n.Taints = &[]machineadm.Taint{{Key: "example.com/t", Effect: "NoSchedule"}, {Key: "example.com/t", Effect: "NoExecute"}, {Key: "example.com/t", Value: "x", Effect: "NoSchedule"}}
		}), want: []fe{{p + "taints[2]", dup}}},
		{name: "kubelet extraArgs", base: worker, mutate: n(func(n *machineadm.Node) { n.Kubelet.ExtraArgs = []machineadm.Arg{{Name: "--v"}} }), want: []fe{{p + "kubelet.extraArgs[0].name", inv}}},
		{name: "kubelet --feature-gates the kubelet cannot parse", base: worker, mutate: n(func(n *machineadm.Node) {
			n.Kubelet.ExtraArgs = []machineadm.Arg{{Name: "feature-gates", Value: "MemoryQoS=false"}, {Name: "feature-gates", Value: "MemoryQoS"}}
		}), want: []fe{{p + "kubelet.extraArgs[1].value", inv}}},
		{name: "kubelet config apiVersion and kind", base: worker, mutate: n(func(n *machineadm.Node) {
			n.Kubelet.Config = map[string]any{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}
		}), want: []fe{{p + "kubelet.config.apiVersion", forb}, {p + "kubelet.config.kind", forb}}},
		{name: "kubelet config unknown fields", base: worker, mutate: n(func(n *machineadm.Node) {
			n.Kubelet.Config = map[string]any{"maxPod": int64(5), "logging": map[string]any{"formatt": "json"}}
		}), want: []fe{{p + "kubelet.config.maxPod", inv}, {p + "kubelet.config.logging.formatt", inv}}},
		{name: "kubelet config mistyped", base: worker, mutate: n(func(n *machineadm.Node) {
			n.Kubelet.Config = map[string]any{"maxPods": "many"}
		}), want: []fe{{p + "kubelet.config.maxPods", typ}}},
	})
}

func gzipBase64(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func TestValidateFiles(t *testing.T) {
	f := func(fn func(files []machineadm.File)) func(c *spec) {
		return func(c *spec) { fn(c.Spec.Host.Files) }
	}
	const p = "spec.host.files"
	src := &machineadm.RemoteSource{URL: "https://files.example/x", SHA256: "8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10"}
	runCases(t, []vcase{
		{name: "path relative", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Path = "etc/x" }), want: []fe{{p + "[0].path", inv}}},
		{name: "path the root directory", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Path = "/" }), want: []fe{{p + "[0].path", inv}}},
		{name: "private key readable by others warns", base: worker, mutate: f(func(fs []machineadm.File) {
			fs[0].Content, fs[0].Encoding, fs[0].Mode = "-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n", "", "0644"
		}), warn: []string{p + "[0].mode"}},
		{name: "private key 0600 is quiet", base: worker, mutate: f(func(fs []machineadm.File) {
			fs[0].Content, fs[0].Encoding, fs[0].Mode = "-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n", "", "0600"
		})},
		{name: "path missing", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Path = "" }), want: []fe{{p + "[0].path", req}}},
		{name: "path duplicate", base: worker, mutate: f(func(fs []machineadm.File) { fs[1].Path = fs[0].Path }), want: []fe{{p + "[1].path", dup}}},
		{name: "path duplicate with append ok", base: worker, mutate: f(func(fs []machineadm.File) { fs[1].Path, fs[1].Append = fs[0].Path, true })},
		{name: "content and source", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Source = src }), want: []fe{{p + "[0].source", forb}}},
		{name: "source with append", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Content, fs[0].Source, fs[0].Append = "", src, true }), want: []fe{{p + "[0].append", forb}}},
		{name: "source url and digest", base: worker, mutate: f(func(fs []machineadm.File) {
			fs[0].Content, fs[0].Source = "", &machineadm.RemoteSource{URL: "ftp://files.example/x", SHA256: "ABC"}
		}), want: []fe{{p + "[0].source.url", inv}, {p + "[0].source.sha256", inv}}},
		{name: "source file URL ok", base: worker, mutate: f(func(fs []machineadm.File) {
			fs[0].Content, fs[0].Source = "", &machineadm.RemoteSource{URL: "file:///opt/payload.tar", SHA256: src.SHA256}
		})},
		{name: "encoding unknown", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Encoding = "zip" }), want: []fe{{p + "[0].encoding", nsup}}},
		{name: "base64 content broken", base: worker, mutate: f(func(fs []machineadm.File) { fs[1].Content = "not base64!" }), want: []fe{{p + "[1].content", inv}}},
		{name: "gzip+base64 content broken", base: worker, mutate: f(func(fs []machineadm.File) { fs[1].Encoding = "gzip+base64" }), want: []fe{{p + "[1].content", inv}}},
		{name: "gzip+base64 content ok", base: worker, mutate: f(func(fs []machineadm.File) { fs[1].Encoding, fs[1].Content = "gzip+base64", gzipBase64(t, "hello") })},
		{name: "mode setuid", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Mode = "4755" }), want: []fe{{p + "[0].mode", inv}}},
		{name: "mode symbolic", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Mode = "rw-r--r--" }), want: []fe{{p + "[0].mode", inv}}},
		{name: "mode three digits ok", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Mode = "755" })},
		{name: "owner and group", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Owner, fs[0].Group = "Root User", "" }), want: []fe{{p + "[0].owner", inv}, {p + "[0].group", inv}}},
		{name: "owner names ok", base: worker, mutate: f(func(fs []machineadm.File) { fs[0].Owner, fs[0].Group = "etcd", "1000" })},
	})
}

func TestValidateHost(t *testing.T) {
	cd := func(fn func(c *machineadm.Containerd)) func(c *spec) {
		return func(c *spec) { fn(c.Spec.Host.Containerd) }
	}
	const p = "spec.host.containerd."
	runCases(t, []vcase{
		{name: "sysctl key", base: worker, mutate: func(c *spec) { c.Spec.Host.Sysctl["net.ipv4 ip_forward"] = "1" }, want: []fe{{"spec.host.sysctl[net.ipv4 ip_forward]", inv}}},
		{name: "sysctl key empty component", base: worker, mutate: func(c *spec) { c.Spec.Host.Sysctl["net..ipv4"] = "1" }, want: []fe{{"spec.host.sysctl[net..ipv4]", inv}}},
		{name: "sysctl key with VLAN interface and glob ok", base: worker, mutate: func(c *spec) {
			c.Spec.Host.Sysctl["net.ipv4.conf.eth0/1.rp_filter"] = "0"
			c.Spec.Host.Sysctl["net.ipv4.conf.*.rp_filter"] = "0"
		}},
		{name: "kernel module", base: worker, mutate: func(c *spec) { c.Spec.Host.KernelModules = []string{"br_netfilter", "br netfilter"} }, want: []fe{{"spec.host.kernelModules[1]", inv}}},
		{name: "kernel module named like an option", base: worker, mutate: func(c *spec) { c.Spec.Host.KernelModules = []string{"-r", "--foo", "br_netfilter", "-"} }, want: []fe{{"spec.host.kernelModules[0]", inv}, {"spec.host.kernelModules[1]", inv}, {"spec.host.kernelModules[3]", inv}}},
		{name: "kernel module with a dash inside ok", base: worker, mutate: func(c *spec) { c.Spec.Host.KernelModules = []string{"nf-conntrack", "_x"} }},
		{name: "containerd scalars", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.ConfigVersion, c.ConfigFile, c.CgroupDriver = 1, "config.toml", "none"
		}), want: []fe{{p + "configVersion", nsup}, {p + "configFile", inv}, {p + "cgroupDriver", nsup}}},
		{name: "containerd config file the root directory", base: worker, mutate: cd(func(c *machineadm.Containerd) { c.ConfigFile = "/" }), want: []fe{{p + "configFile", inv}}},
		{name: "registry hosts", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.Registries = append(c.Registries, machineadm.Registry{}, machineadm.Registry{Host: "docker.io"}, machineadm.Registry{Host: "bad host"}, machineadm.Registry{Host: "registry.example:5000", Server: "ftp://registry.example"})
		}), want: []fe{{p + "registries[1].host", req}, {p + "registries[2].host", dup}, {p + "registries[3].host", inv}, {p + "registries[4].server", inv}}},
		{name: "mirror url and capabilities", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.Registries[0].Mirrors = append(c.Registries[0].Mirrors, machineadm.Mirror{URL: "mirror.example", Capabilities: []string{"pull", "delete"}})
		}), want: []fe{{p + "registries[0].mirrors[1].url", inv}, {p + "registries[0].mirrors[1].capabilities[1]", nsup}}},
		{name: "mirror client cert without key", base: worker, mutate: cd(func(c *machineadm.Containerd) { c.Registries[0].Mirrors[0].ClientKey = "" }), want: []fe{{p + "registries[0].mirrors[0].clientKey", req}}},
		{name: "mirror client key without cert", base: worker, mutate: cd(func(c *machineadm.Containerd) { c.Registries[0].Mirrors[0].ClientCert = "" }), want: []fe{{p + "registries[0].mirrors[0].clientCert", req}}},
		{name: "PEM fields", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			m := &c.Registries[0].Mirrors[0]
			c.Registries[0].CACert = "not PEM"
			m.CACert, m.ClientCert, m.ClientKey = m.ClientKey, m.ClientKey, m.ClientCert+"trailing"
		}), want: []fe{{p + "registries[0].caCert", inv}, {p + "registries[0].mirrors[0].caCert", inv}, {p + "registries[0].mirrors[0].clientCert", inv}, {p + "registries[0].mirrors[0].clientKey", inv}}, secret: "PRIVATE KEY-----\nM"},
		{name: "runtimes", base: worker, mutate: cd(func(c *machineadm.Containerd) {
			c.Runtimes = append(c.Runtimes, machineadm.Runtime{Name: "Kata"}, machineadm.Runtime{Name: "kata"})
		}), want: []fe{{p + "runtimes[1].name", inv}, {p + "runtimes[2].name", dup}}},
		{name: "configPatch not TOML", base: worker, mutate: cd(func(c *machineadm.Containerd) { c.ConfigPatch = "[plugins" }), want: []fe{{p + "configPatch", inv}}},
		{name: "static pods need ControlPlane", base: worker, mutate: func(c *spec) { c.Spec.Host.StaticPods = base(t, cpInit).Spec.Host.StaticPods }, want: []fe{{"spec.host.staticPods", forb}}},
		{name: "static pod names", base: cpInit, mutate: func(c *spec) {
			sp := c.Spec.Host.StaticPods[0]
			c.Spec.Host.StaticPods = append(c.Spec.Host.StaticPods, sp, machineadm.StaticPod{Name: "Bad_Name", Manifest: sp.Manifest})
		}, want: []fe{{"spec.host.staticPods[1].name", dup}, {"spec.host.staticPods[2].name", inv}}},
		{name: "static pod manifests", base: cpInit, mutate: func(c *spec) {
			c.Spec.Host.StaticPods = []machineadm.StaticPod{
				{Name: "a", Manifest: "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n"},
				{Name: "b", Manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {containerz: []}\n"},
				{Name: "c", Manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: c}\nspec: {}\n"},
				{Name: "d", Manifest: "{not yaml"},
				{Name: "e", Manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: e}\nspec: {containers: [{name: x}]}\n"},
			}
		}, want: []fe{{"spec.host.staticPods[0].manifest", inv}, {"spec.host.staticPods[1].manifest", inv}, {"spec.host.staticPods[2].manifest", inv}, {"spec.host.staticPods[3].manifest", inv}, {"spec.host.staticPods[4].manifest", inv}}},
	})
}

func TestValidateReport(t *testing.T) {
	r := func(fn func(r *machineadm.Report)) func(c *spec) {
		return func(c *spec) { fn(&c.Spec.Report) }
	}
	runCases(t, []vcase{
		{name: "path missing", base: worker, mutate: r(func(r *machineadm.Report) { r.Path = "" }), want: []fe{{"spec.report.path", req}}},
		{name: "sentinel relative", base: worker, mutate: r(func(r *machineadm.Report) { r.Sentinel = "done" }), want: []fe{{"spec.report.sentinel", inv}}},
		{name: "sentinel disabled ok", base: worker, mutate: r(func(r *machineadm.Report) { r.Sentinel = "-" })},
		{name: "url scheme", base: worker, mutate: r(func(r *machineadm.Report) { r.URL = "ftp://reports.example/x" }), want: []fe{{"spec.report.url", inv}}},
		{name: "url without host", base: worker, mutate: r(func(r *machineadm.Report) { r.URL = "https:///reports" }), want: []fe{{"spec.report.url", inv}}},
		{name: "url ok", base: worker, mutate: r(func(r *machineadm.Report) { r.URL = "https://reports.example/machines" })},
		// A report or sentinel at "/" cannot be written: the run went on
		// and its report was lost with a warning.
		{name: "path and sentinel the root directory", base: worker, mutate: r(func(r *machineadm.Report) { r.Path, r.Sentinel = "/", "/" }), want: []fe{{"spec.report.path", inv}, {"spec.report.sentinel", inv}}},
	})
}

func TestParseVersion(t *testing.T) {
	ma, mi, pa, err := ParseVersion("v1.37.2")
	if err != nil || ma != 1 || mi != 37 || pa != 2 {
		t.Errorf("ParseVersion(v1.37.2) = %d %d %d %v", ma, mi, pa, err)
	}
	for _, bad := range []string{"", "1.37.2", "v1.37", "v1.37.x", "v1.37.2+build"} {
		if _, _, _, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q): want an error", bad)
		}
	}
}

// TestGzipBombRefused: a few kilobytes of gzip+base64 that inflate past
// machineadm.MaxContentBytes are an error at the content's field path,
// and validation does not inflate them without bound.
func TestGzipBombRefused(t *testing.T) {
	c := base(t, worker)
	c.Spec.Host.Files[1].Encoding, c.Spec.Host.Files[1].Content = "gzip+base64", gzipZeros(t, machineadm.MaxContentBytes+1)
	if n := len(c.Spec.Host.Files[1].Content); n > 200<<10 {
		t.Fatalf("the bomb is %d bytes of base64; want a small one", n)
	}
	r := Validate(c)
	var found bool
	for _, e := range r.Errors {
		if e.Field == "spec.host.files[1].content" && strings.Contains(e.Detail, "exceeds 64 MiB") {
			found = true
		} else {
			t.Errorf("unexpected error %v", e)
		}
	}
	if !found {
		t.Errorf("a gzip bomb in spec.host.files[1].content: errors %v, want one naming the field and the 64 MiB bound", r.Errors)
	}
}

// gzipZeros returns gzip+base64 content that inflates to n zero bytes.
func gzipZeros(t *testing.T, n int) string {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	chunk := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(chunk))
		if _, err := zw.Write(chunk[:k]); err != nil {
			t.Fatal(err)
		}
		n -= k
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}
