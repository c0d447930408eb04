package validation

import (
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Paths with control characters would land in file names, systemd units
// and kubeadm flags as given: each one is refused, wherever paths are
// taken.
func TestValidatePathsRefuseControlCharacters(t *testing.T) {
	runCases(t, []vcase{
		{name: "newline in a file path", base: worker, mutate: func(c *spec) { c.Spec.Host.Files[0].Path = "/etc/demo\n.conf" }, want: []fe{{"spec.host.files[0].path", inv}}},
		{name: "NUL in pki.dir", base: cpInit, mutate: func(c *spec) { c.Spec.ControlPlane.PKI.Dir = "/etc/machineadm/pki\x00" }, want: []fe{{"spec.controlPlane.pki.dir", inv}}},
		{name: "tab in certificatesDir", base: cpInit, mutate: func(c *spec) { c.Spec.ControlPlane.PKI.CertificatesDir = "/etc/kubernetes/\tpki" }, want: []fe{{"spec.controlPlane.pki.certificatesDir", inv}}},
		{name: "DEL in a secret file", base: worker, mutate: func(c *spec) { c.Spec.Join.Token.File = "/etc/machineadm/secrets/token\x7f" }, want: []fe{{"spec.join.token.file", inv}}},
		{name: "ESC in the etcd data dir", base: cpInit, mutate: func(c *spec) { c.Spec.ControlPlane.Etcd.Local.DataDir = "/var/lib/\x1b[2Jetcd" }, want: []fe{{"spec.controlPlane.etcd.local.dataDir", inv}}},
		{name: "CR in the report path", base: worker, mutate: func(c *spec) { c.Spec.Report.Path = "/var/lib/machineadm/report.json\r" }, want: []fe{{"spec.report.path", inv}}},
		{name: "newline in containerd's config file", base: worker, mutate: func(c *spec) { c.Spec.Host.Containerd.ConfigFile = "/etc/containerd/config.toml\n" }, want: []fe{{"spec.host.containerd.configFile", inv}}},
		{name: "newline in the kubelet's staticPodPath", base: cpInit, mutate: func(c *spec) {
			c.Spec.Node.Kubelet.Config["staticPodPath"] = "/etc/kubernetes/manifests\nExecStart=/bin/sh"
		}, want: []fe{{"spec.node.kubelet.config.staticPodPath", inv}}},
		{name: "relative staticPodPath", base: cpInit, mutate: func(c *spec) { c.Spec.Node.Kubelet.Config["staticPodPath"] = "manifests" }, want: []fe{{"spec.node.kubelet.config.staticPodPath", inv}}},
		{name: "staticPodPath with ..", base: cpInit, mutate: func(c *spec) { c.Spec.Node.Kubelet.Config["staticPodPath"] = "/etc/kubernetes/../../tmp" }, want: []fe{{"spec.node.kubelet.config.staticPodPath", inv}}},
		{name: "staticPodPath with a trailing slash ok", base: cpInit, mutate: func(c *spec) { c.Spec.Node.Kubelet.Config["staticPodPath"] = "/etc/kubelet.d/" }},
		{name: "non-ASCII path ok", base: worker, mutate: func(c *spec) { c.Spec.Host.Files[0].Path = "/etc/démo.conf" }},
	})
	c := base(t, worker)
	c.Spec.Host.Files[0].Path = "/etc/demo\n.conf"
	msg := Validate(c).Errors.ToAggregate().Error()
	if !strings.Contains(msg, "control character") || !strings.Contains(msg, `"/etc/demo\n.conf"`) {
		t.Errorf("message does not name the problem or shows the path raw: %s", msg)
	}
}

func TestValidateAdvertiseAddress(t *testing.T) {
	set := func(a string) func(c *spec) { return func(c *spec) { c.Spec.ControlPlane.AdvertiseAddress = a } }
	const f = "spec.controlPlane.advertiseAddress"
	var cases []vcase
	for _, bad := range []string{"127.0.0.1", "127.1.2.3", "::1", "0.0.0.0", "::", "224.0.0.1", "ff02::1", "255.255.255.255", "cp1.example"} {
		cases = append(cases, vcase{name: bad, base: cpInit, mutate: set(bad), want: []fe{{f, inv}}})
	}
	for _, good := range []string{"10.0.0.5", "192.0.2.10", "fd00::10", "2001:db8::1"} {
		cases = append(cases, vcase{name: good + " ok", base: cpInit, mutate: set(good)})
	}
	runCases(t, cases)
	c := base(t, cpInit)
	c.Spec.ControlPlane.AdvertiseAddress = "127.0.0.1"
	if msg := Validate(c).Errors.ToAggregate().Error(); !strings.Contains(msg, "loopback") {
		t.Errorf("message does not say why: %s", msg)
	}
}

func TestValidateImageRepository(t *testing.T) {
	set := func(r string) func(c *spec) { return func(c *spec) { c.Spec.Kubernetes.ImageRepository = r } }
	const f = "spec.kubernetes.imageRepository"
	var cases []vcase
	for _, good := range []string{"registry.k8s.io", "registry.example.com:5000/k8s/mirror", "localhost:5000", "mirror.example.internal/a_b/c-d.e", "myorg", "[fd00::1]:5000/k8s"} {
		cases = append(cases, vcase{name: good + " ok", base: worker, mutate: set(good)})
	}
	for _, bad := range []string{
		"registry.example.com/K8s",         // upper-case path
		"registry.example.com/",            // empty path component
		"registry.example.com/k8s:v1.37.2", // a tag, not a repository
		"registry.example.com/k8s@sha256:" + strings.Repeat("a", 64),
		"https://registry.example.com", // a URL
		"registry.example.com//k8s",
		"registry example.com",
		"-registry.example.com",
	} {
		cases = append(cases, vcase{name: bad, base: worker, mutate: set(bad), want: []fe{{f, inv}}})
	}
	runCases(t, cases)
	c := base(t, worker)
	c.Spec.Kubernetes.ImageRepository = "registry.example.com/K8s"
	if msg := Validate(c).Errors.ToAggregate().Error(); !strings.Contains(msg, "host[:port]/path") {
		t.Errorf("message does not give the shape: %s", msg)
	}
}

// Credentials in URLs are allowed but warned about, by field; no message
// shows the password, neither a warning nor the error for a bad URL.
func TestValidateURLCredentialsWarn(t *testing.T) {
	const pw = "s3cret-passw0rd"
	const cd = "spec.host.containerd."
	proxy := func(http, https string) func(c *spec) {
		return func(c *spec) { c.Spec.Host.Containerd.Proxy = &machineadm.Proxy{HTTPProxy: http, HTTPSProxy: https} }
	}
	runCases(t, []vcase{
		{name: "proxy password", base: worker, mutate: proxy("http://user:"+pw+"@proxy.example:3128", "http://proxy.example:3128"), warn: []string{cd + "proxy.httpProxy"}, secret: pw},
		{name: "proxy token as user name", base: worker, mutate: proxy("", "socks5://"+pw+"@proxy.example:1080"), warn: []string{cd + "proxy.httpsProxy"}, secret: pw},
		{name: "report URL password", base: worker, mutate: func(c *spec) { c.Spec.Report.URL = "https://reporter:" + pw + "@reports.example/r" }, warn: []string{"spec.report.url"}, secret: pw},
		{name: "report URL invalid with password", base: worker, mutate: func(c *spec) { c.Spec.Report.URL = "https://reporter:" + pw + "@" }, want: []fe{{"spec.report.url", inv}}, secret: pw},
		{name: "file source password", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "https://fetch:" + pw + "@files.example/x", SHA256: validCertKey}
		}, warn: []string{"spec.host.files[0].source.url"}, secret: pw},
		// The error for a file URL of another host showed the URL as
		// written, its password too.
		{name: "file URL of another host with password", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "file://fetch:" + pw + "@files.example/x", SHA256: validCertKey}
		}, want: []fe{{"spec.host.files[0].source.url", inv}}, secret: pw},
		{name: "registry server and mirror passwords", base: worker, mutate: func(c *spec) {
			r := &c.Spec.Host.Containerd.Registries[0]
			r.Server = "https://robot:" + pw + "@registry.example"
			r.Mirrors[0].URL = "https://robot:" + pw + "@mirror.demo.example"
		}, warn: []string{cd + "registries[0].server", cd + "registries[0].mirrors[0].url"}, secret: pw},
		{name: "mirror URL invalid with password", base: worker, mutate: func(c *spec) {
			c.Spec.Host.Containerd.Registries[0].Mirrors[0].URL = "ftp://robot:" + pw + "@mirror.demo.example"
		}, want: []fe{{cd + "registries[0].mirrors[0].url", inv}}, secret: pw},
		// A presigned URL's signature is in its query: an invalid one
		// (a scheme not allowed, a bad port) showed it whole.
		{name: "file source of another scheme with a token in its query", base: worker, mutate: func(c *spec) {
			f := &c.Spec.Host.Files[0]
			f.Content, f.Source = "", &machineadm.RemoteSource{URL: "ftp://files.example/x?X-Amz-Signature=" + pw, SHA256: validCertKey}
		}, want: []fe{{"spec.host.files[0].source.url", inv}}, secret: pw},
		{name: "report URL with a bad port and a token in its fragment", base: worker, mutate: func(c *spec) {
			c.Spec.Report.URL = "https://reports.example:70000/r#token=" + pw
		}, want: []fe{{"spec.report.url", inv}}, secret: pw},
	})
	c := base(t, worker)
	c.Spec.Host.Containerd.Proxy = &machineadm.Proxy{HTTPProxy: "http://user:" + pw + "@proxy.example:3128"}
	if w := Validate(c).Warnings; len(w) != 1 || !strings.Contains(w[0].Message, "credentials") {
		t.Errorf("warning does not say what: %v", w)
	}
}
