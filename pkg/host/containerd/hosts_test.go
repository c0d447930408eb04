package containerd

import (
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

const testCert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
const testKey = "-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n"

func registries() []machineadm.Registry {
	return []machineadm.Registry{
		{
			Host: "docker.io",
			Mirrors: []machineadm.Mirror{
				{URL: "https://mirror-b.example.com", Capabilities: []string{"pull", "resolve"}, CACert: testCert, ClientCert: testCert, ClientKey: testKey},
				{URL: "https://mirror-a.example.com/v2/proxy", Capabilities: []string{"pull"}, SkipVerify: true, OverridePath: true},
			},
			Server: "https://registry-1.docker.io",
		},
		{Host: "registry.example.com:5000", CACert: testCert, SkipVerify: false, ClientCert: testCert, ClientKey: testKey},
	}
}

func TestHostsGolden(t *testing.T) {
	files, err := HostsFiles(registries())
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range files {
		all.WriteString("### " + f.Path)
		if f.Secret {
			all.WriteString(" (secret, 0600)\n")
			if f.Mode != 0o600 {
				t.Errorf("%s: secret with mode %o", f.Path, f.Mode)
			}
			continue
		}
		all.WriteString("\n")
		all.Write(f.Content)
	}
	golden(t, "hosts.txt", []byte(all.String()))
}

func TestHostsMirrorOrderKept(t *testing.T) {
	files, err := HostsFiles(registries())
	if err != nil {
		t.Fatal(err)
	}
	var hosts string
	for _, f := range files {
		if f.Path == "/etc/containerd/certs.d/docker.io/hosts.toml" {
			hosts = string(f.Content)
		}
	}
	b, a := strings.Index(hosts, "mirror-b"), strings.Index(hosts, "mirror-a")
	if b < 0 || a < 0 || b > a {
		t.Errorf("mirrors out of spec order (b must precede a):\n%s", hosts)
	}
	var tree map[string]any
	if err := toml.Unmarshal([]byte(hosts), &tree); err != nil {
		t.Fatalf("hosts.toml is not TOML: %v", err)
	}
	if tree["server"] != "https://registry-1.docker.io" {
		t.Errorf("server = %v", tree["server"])
	}
	m := tree["host"].(map[string]any)["https://mirror-a.example.com/v2/proxy"].(map[string]any)
	if m["override_path"] != true || m["skip_verify"] != true {
		t.Errorf("mirror a = %#v", m)
	}
}

func TestHostsDefaultServer(t *testing.T) {
	files, err := HostsFiles([]machineadm.Registry{{Host: "quay.io"}})
	if err != nil || len(files) != 1 {
		t.Fatalf("files %v, %v", files, err)
	}
	if !strings.Contains(string(files[0].Content), "server = 'https://quay.io'") {
		t.Errorf("default server missing:\n%s", files[0].Content)
	}
}

func TestProxyDropIn(t *testing.T) {
	if RenderProxy(nil) != nil || RenderProxy(&machineadm.Proxy{}) != nil {
		t.Error("empty proxy should give no drop-in")
	}
	got := string(RenderProxy(&machineadm.Proxy{
		HTTPProxy:  "http://user:p%40ss@proxy.example.com:3128",
		HTTPSProxy: "http://proxy.example.com:3128",
		NoProxy:    "10.0.0.0/8,.svc,localhost",
	}))
	golden(t, "proxy.conf", []byte(got))
	if !strings.Contains(got, `Environment="HTTP_PROXY=http://user:p%%40ss@proxy.example.com:3128"`) {
		t.Errorf("'%%' must be doubled for systemd:\n%s", got)
	}
}

func TestProxyMode(t *testing.T) {
	for _, tc := range []struct {
		p      *machineadm.Proxy
		mode   uint32
		secret bool
	}{
		{nil, 0o644, false},
		{&machineadm.Proxy{HTTPSProxy: "http://proxy.example.com:3128", NoProxy: "10.0.0.0/8"}, 0o644, false},
		{&machineadm.Proxy{HTTPProxy: "http://user:pass@proxy.example.com:3128"}, 0o600, true},
		{&machineadm.Proxy{HTTPSProxy: "http://token@proxy.example.com:3128"}, 0o600, true},
		{&machineadm.Proxy{HTTPSProxy: "user:pass@proxy.example.com:3128"}, 0o600, true},
	} {
		if mode, secret := ProxyMode(tc.p); mode != tc.mode || secret != tc.secret {
			t.Errorf("ProxyMode(%+v) = %o, %v; want %o, %v", tc.p, mode, secret, tc.mode, tc.secret)
		}
	}
}
