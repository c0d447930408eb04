package redact

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

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
