package sealspec

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"regexp"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/machineadm/machineadm/pkg/render"
	"github.com/machineadm/machineadm/pkg/seal"
	"github.com/machineadm/machineadm/pkg/spec"
)

// Agent sources of the size figures (docs/bootstrap-data-sizes.md): a
// 70-character https URL with its digest, or the agent in the image.
const (
	sizeAgentURL    = "https://downloads.example.com/machineadm/v0.1.0/linux-amd64/machineadm"
	sizeAgentSHA256 = "2f1e5f3c1b0c5a9a0f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a"
	sizeAgentImage  = "file:///usr/local/bin/machineadm"
)

// comment matches a YAML comment line.
var comment = regexp.MustCompile(`(?m)^[ \t]*#.*\n`)

// TestSealedUserDataSizes renders sealed specs with `machineadm render
// --format cloud-config` (no --insecure-inline-secrets) and checks the
// budgets of issue 10:
//   - worker join (the worker example, token sealed), agent in the image:
//     at most 1,500 bytes;
//   - control-plane init (the control-plane-init example with the CA set of
//     `machineadm pki init`, ECDSA P-256, the bootstrap token and the
//     certificate key sealed), agent from a URL, as a gzip-compressed
//     cloud-config (render --gzip, which cloud-init decompresses): at most
//     4,096 bytes, with or without the example's comments. The plain-text
//     cloud-config of the same spec (about 4,450 bytes; see
//     docs/bootstrap-data-sizes.md for where the bytes go) is measured and
//     logged. Every case must fit the aws preset (16,384 bytes).
func TestSealedUserDataSizes(t *testing.T) {
	id, _ := identity(t, seal.HPKESuiteP384)
	cases := []struct {
		name, example string
		pki           bool
		agent, sha    string
		strip, gzip   bool
		budget        int
	}{
		{"worker-join", "worker.yaml", false, sizeAgentImage, "", false, false, workerJoinBudget},
		{"control-plane-init --gzip", "control-plane-init.yaml", true, sizeAgentURL, sizeAgentSHA256, true, true, controlPlaneInitBudget},
		{"control-plane-init --gzip with comments", "control-plane-init.yaml", true, sizeAgentURL, sizeAgentSHA256, false, true, controlPlaneInitBudget},
		{"control-plane-init", "control-plane-init.yaml", true, sizeAgentURL, sizeAgentSHA256, true, false, 0},
		{"control-plane-init with comments", "control-plane-init.yaml", true, sizeAgentURL, sizeAgentSHA256, false, false, 0},
	}
	for _, c := range cases {
		plain := example(t, c.example)
		if c.strip {
			plain = comment.ReplaceAll(plain, nil)
		}
		s, err := SealSpec(plain, SealOptions{Recipients: []string{id.Recipient()}, Root: machineRoot(t, c.pki)})
		if err != nil {
			t.Fatal(err)
		}
		clearSpec, _, err := seal.Split(s.File)
		if err != nil {
			t.Fatal(err)
		}
		l, err := spec.Load(clearSpec, "sealed")
		if err != nil {
			t.Fatal(err)
		}
		out, err := render.Render(s.File, l.Config, render.Options{Format: render.FormatCloudConfig, Agent: render.AgentSource{URL: c.agent, SHA256: c.sha}, MaxSize: render.Presets[0], Gzip: c.gzip})
		if err != nil {
			t.Fatalf("%s: a sealed spec must render without --insecure-inline-secrets: %v", c.name, err)
		}
		doc := out
		if c.gzip {
			doc = gunzipAll(t, out)
		}
		if got := writtenSpec(t, doc); !bytes.Equal(got, s.File) {
			t.Fatalf("%s: the cloud-config does not write the sealed file byte for byte", c.name)
		}
		if bytes.Contains(doc, []byte("PRIVATE KEY")) {
			t.Fatalf("%s: the cloud-config holds a PEM private key", c.name)
		}
		t.Logf("%s: clear spec %d B, sealed file %d B; cloud-config %d B (budget %d, target for control-plane init %d)", c.name, len(clearSpec), len(s.File), len(out), c.budget, controlPlaneInitBudget)
		if c.budget > 0 && len(out) > c.budget {
			t.Errorf("%s: cloud-config of %d B is over the %d B budget", c.name, len(out), c.budget)
		}
	}
}

// gunzipAll decompresses a gzip-compressed cloud-config.
func gunzipAll(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writtenSpec is what the cloud-config's write_files entry for
// render.LinuxSpecPath writes (gz+b64, or plain text).
func writtenSpec(t *testing.T, cloudConfig []byte) []byte {
	t.Helper()
	var cc struct {
		WriteFiles []struct{ Path, Encoding, Content string } `yaml:"write_files"`
	}
	if err := yaml.Unmarshal(cloudConfig, &cc); err != nil {
		t.Fatal(err)
	}
	for _, f := range cc.WriteFiles {
		if f.Path == render.LinuxSpecPath && f.Encoding == "" {
			return []byte(f.Content)
		}
		if f.Path != render.LinuxSpecPath || f.Encoding != "gz+b64" {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("no write_files entry for %s", render.LinuxSpecPath)
	return nil
}
