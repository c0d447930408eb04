package sealspec

import (
	"fmt"
	"testing"

	"github.com/machineadm/machineadm/pkg/render"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/spec"
)

func TestXSizes(t *testing.T) {
	id, _ := identity(t, seal.HPKESuiteP384)
	for _, c := range []struct{ ex, agent string; pki bool }{
		{"control-plane-init.yaml", "https://downloads.example.com/machineadm/v0.1.0/linux-amd64/machineadm", true},
		{"worker.yaml", "file:///usr/local/bin/machineadm", false},
	} {
		root := machineRoot(t, c.pki)
		s, err := SealSpec(example(t, c.ex), SealOptions{Recipients: []string{id.Recipient()}, Root: root})
		if err != nil {
			t.Fatal(err)
		}
		clearSpec, env, _ := seal.Split(s.File)
		l, err := spec.Load(clearSpec, "x")
		if err != nil {
			t.Fatal(err)
		}
		out, err := render.Render(s.File, l.Config, render.Options{Format: render.FormatCloudConfig, Agent: render.AgentSource{URL: c.agent, SHA256: "2f1e5f3c1b0c5a9a0f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: clear %d env %d file %d gz %d; cloud-config %d", c.ex, len(clearSpec), len(env), len(s.File), MeasureSize(s.File).GzipBase64, len(out))
		t.Logf("%s", env)
	}
}

func TestXParts(t *testing.T) {
	id, _ := identity(t, seal.HPKESuiteP384)
	root := machineRoot(t, true)
	s, _ := SealSpec(example(t, "control-plane-init.yaml"), SealOptions{Recipients: []string{id.Recipient()}, Root: root})
	clearSpec, env, _ := seal.Split(s.File)
	t.Logf("clear %d -> %d; env %d -> %d; both %d -> %d", len(clearSpec), MeasureSize(clearSpec).GzipBase64, len(env), MeasureSize(env).GzipBase64, len(s.File), MeasureSize(s.File).GzipBase64)
	l, _ := spec.Load(clearSpec, "x")
	for _, a := range []string{"https://downloads.example.com/machineadm/v0.1.0/linux-amd64/machineadm", "file:///usr/local/bin/machineadm"} {
		out, _ := render.Render([]byte("x"), l.Config, render.Options{Format: render.FormatCloudConfig, Agent: render.AgentSource{URL: a, SHA256: "2f1e5f3c1b0c5a9a0f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a"}})
		t.Logf("%s: cloud-config with a 1-byte spec: %d", a, len(out))
	}
	b, _ := decodeBundleSizes(root)
	t.Log(b)
}

func decodeBundleSizes(root string) (string, error) {
	out := ""
	for _, n := range PKIFiles {
		b, _ := readSecret(root, "/etc/machineadm/pki/"+n)
		one, _ := encodeBundle(map[string][]byte{n: b})
		out += fmt.Sprintf("%s %d->%d; ", n, len(b), len(one))
	}
	return out, nil
}
