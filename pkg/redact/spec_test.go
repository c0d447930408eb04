package redact

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/internal/fill"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

func TestSpecSecrets(t *testing.T) {
	s := newTestSecrets(t)
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("/etc/machineadm/token", s.token+"\n")
	write("/etc/machineadm/pki/ca.key", s.caKey)
	write("/etc/machineadm/pki/etcd/ca.key", "etcd-ca-private-key-material")
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{
		Join: &machineadm.Join{Token: machineadm.SecretSource{File: "/etc/machineadm/token"}},
		ControlPlane: &machineadm.ControlPlane{
			CertificateKey:  &machineadm.SecretSource{Value: s.certKey},
			BootstrapTokens: []machineadm.BootstrapToken{{Token: machineadm.SecretSource{Value: "zzzzzz.zzzzzzzzzzzzzzzz"}}, {Token: machineadm.SecretSource{File: "/missing"}}},
			PKI:             machineadm.PKI{Dir: "/etc/machineadm/pki"},
		},
		Host: machineadm.Host{
			Files: []machineadm.File{
				{Path: "/etc/secret", Content: "private-file-content", Mode: "0600"},
				{Path: "/etc/motd", Content: "public-file-content", Mode: "0644"},
			},
			Containerd: &machineadm.Containerd{
				Proxy:      &machineadm.Proxy{HTTPProxy: "http://u:proxy-password@127.0.0.1:3128"},
				Registries: []machineadm.Registry{{Host: "r", Mirrors: []machineadm.Mirror{{URL: "https://m", ClientKey: "mirror-client-key"}}}},
			},
		},
	}}
	got := SpecSecrets(cfg, root)
	for _, want := range []string{s.token + "\n", s.certKey, "zzzzzz.zzzzzzzzzzzzzzzz", s.caKey, "etcd-ca-private-key-material", "private-file-content", "proxy-password", "mirror-client-key"} {
		if !slices.Contains(got, want) {
			t.Errorf("SpecSecrets misses %q (got %d values)", want, len(got))
		}
	}
	if slices.Contains(got, "public-file-content") {
		t.Error("a world-readable file's content is not a secret")
	}
	text := ForSpec(cfg, root).String(leakyText(s) + " proxy-password")
	assertClean(t, "ForSpec", text, append(s.forbidden(), "proxy-password"))
	if SpecSecrets(nil, root) != nil {
		t.Error("nil spec must give no secrets")
	}
}

// Every credential in a URL of the spec, and every registry client key,
// is a secret; a short password is caught with its user name or URL.
func TestSpecSecretsURLsAndRegistryKeys(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{
		Host: machineadm.Host{
			Files: []machineadm.File{{Path: "/opt/x", Source: &machineadm.RemoteSource{URL: "https://fetch:f3tch-passw0rd@127.0.0.1/x"}}},
			Containerd: &machineadm.Containerd{
				Proxy: &machineadm.Proxy{HTTPProxy: "proxyuser:sh0rt@127.0.0.1:3128", HTTPSProxy: "http://u:p%40ss-w0rd-long@127.0.0.1:3128"},
				Registries: []machineadm.Registry{{
					Host: "r", ClientKey: "registry-client-key",
					Server: "https://reg:r3g-passw0rd@127.0.0.1:5000",
				}},
			},
		},
		Report: machineadm.Report{URL: "https://reporter:rep0rt-passw0rd@127.0.0.1/r"},
	}}
	got := SpecSecrets(cfg, t.TempDir())
	for _, want := range []string{
		"registry-client-key", "rep0rt-passw0rd", "f3tch-passw0rd", "r3g-passw0rd",
		"proxyuser:sh0rt", "p%40ss-w0rd-long", "p@ss-w0rd-long", "p%%40ss-w0rd-long",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("SpecSecrets misses %q: %q", want, got)
		}
	}
	text := ForSpec(cfg, "/").String(strings.Join([]string{
		"Environment=\"HTTP_PROXY=proxyuser:sh0rt@127.0.0.1:3128\"",
		"Environment=\"HTTPS_PROXY=http://u:p%%40ss-w0rd-long@127.0.0.1:3128\"",
		"proxyconnect tcp: password p@ss-w0rd-long refused",
		"POST https://reporter:rep0rt-passw0rd@127.0.0.1/r: connection refused",
		"client key registry-client-key",
	}, "\n"))
	assertClean(t, "ForSpec", text, []string{"sh0rt", "ss-w0rd-long", "rep0rt-passw0rd", "registry-client-key"})
}

func TestURLCredentials(t *testing.T) {
	for raw, want := range map[string]bool{
		"http://user:pass@proxy:3128":         true,
		"http://token@proxy:3128":             true,
		"user:pass@proxy:3128":                true, // no scheme, as proxy variables allow
		"http://user:p/ss@proxy:3128":         true, // unescaped "/": Go refuses it, still a password
		"socks5://u:p%40ss@[fd00::1]:1080":    true,
		"http://proxy.example.com:3128":       false,
		"http://proxy:3128/path@not-userinfo": false,
		"https://h/x?sig=a@b":                 false,
		"":                                    false,
	} {
		if got := URLHasCredentials(raw); got != want {
			t.Errorf("URLHasCredentials(%q) = %v, want %v", raw, got, want)
		}
		if got := URLSecrets(raw); (len(got) > 0) != want {
			t.Errorf("URLSecrets(%q) = %q", raw, got)
		}
	}
	if got := URLSecrets("http://user:p/ss@proxy:3128"); !slices.Contains(got, "p/ss") {
		t.Errorf("malformed URL's password missing: %q", got)
	}
}

// TestSpecSecretsCoversTheWalk: every inline secret machineadm.SecretFields
// finds in a spec with every field set is among SpecSecrets, so a secret
// field added to the types is redacted without editing the redactor.
func TestSpecSecretsCoversTheWalk(t *testing.T) {
	var cfg machineadm.MachineBootstrapConfig
	fill.All(t, &cfg)
	cfg.Spec.Report.URL = "https://user:hunter2-report@report.example/"
	cfg.Spec.Host.Files[1].Mode = "0600"
	got := SpecSecrets(&cfg, t.TempDir())
	n := 0
	for _, f := range machineadm.SecretFields(&cfg) {
		var want string
		switch f.Kind {
		case machineadm.SecretKindSource:
			want = f.Source.Value
		case machineadm.SecretKindPEMKey, machineadm.SecretKindFileContent:
			want = *f.Value
		case machineadm.SecretKindURLCredentials:
			want = "hunter2-report"
		default:
			continue
		}
		n++
		if !slices.Contains(got, want) {
			t.Errorf("%s (%s): %q not among SpecSecrets", f.Path, f.Kind, want)
		}
	}
	if n < 10 {
		t.Errorf("only %d secrets in a filled spec; is the walk empty?", n)
	}
}
