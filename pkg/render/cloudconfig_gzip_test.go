package render

import (
	"github.com/machineadm/machineadm/pkg/render/quote"

	"bytes"
	"errors"
	"path/filepath"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestPlainText: what plainText lets travel unencoded comes back from
// YAML byte for byte; everything it refuses is a case YAML would change or
// quote.
func TestPlainText(t *testing.T) {
	for _, c := range []struct {
		data  string
		plain bool
	}{
		{"a: 1\nb:\n  - x\n", true},
		{"tabs\tinside\n\tand leading\n", true},
		{"unicode é ✓\n", true},
		{"  leading spaces\n# comment\n---\n{{ x }}\n", true},
		{"", false},
		{"no final newline", false},
		{"crlf\r\n", false},
		{"trailing space \n", false},
		{"trailing tab\t\n", false},
		{"\ufeffbom\n", false},
		{"nul \x00\n", false},
		{"esc \x1b[0m\n", false},
		{"c1 \u0085\n", false},
		{"line sep \u2028\n", false},
		{"bad utf-8 \xff\n", false},
	} {
		if got := plainText([]byte(c.data)); got != c.plain {
			t.Errorf("plainText(%q) = %v, want %v", c.data, got, c.plain)
		}
		if !c.plain {
			continue
		}
		out, err := yaml.Marshal(writeFile{Path: "/p", Permissions: "0600", Content: quote.YAMLString(c.data)})
		if err != nil {
			t.Fatal(err)
		}
		var back writeFile
		if err := yaml.Unmarshal(out, &back); err != nil || string(back.Content) != c.data {
			t.Errorf("%q does not survive YAML: %q, %v\n%s", c.data, back.Content, err, out)
		}
	}
}

// TestCloudConfigGzip: a gzip-compressed cloud-config is smaller than the
// plain one, its decompressed document writes the spec and the stub as
// plain text, and cloud-init's own code (decomp_gzip, write_files) runs it
// to a verified agent with the spec byte for byte.
func TestCloudConfigGzip(t *testing.T) {
	spec, cfg := loadExample(t, "control-plane-init")
	agent := []byte(testAgentScript)
	srv := newAgentServer(t, map[string][]byte{"/agent": agent})
	o := Options{Format: FormatCloudConfig, Agent: AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex(agent)}}
	plain := mustRender(t, spec, cfg, o)
	o.Gzip = true
	out := mustRender(t, spec, cfg, o)
	if !bytes.HasPrefix(out, []byte{0x1f, 0x8b}) {
		t.Fatalf("not gzip: %q", out[:8])
	}
	if len(out) >= len(plain) {
		t.Errorf("gzip cloud-config %d B is not smaller than the plain one (%d B)", len(out), len(plain))
	}
	if again := mustRender(t, spec, cfg, o); !bytes.Equal(again, out) {
		t.Error("two renders of the same input differ (gzip header must carry no time)")
	}
	doc := gunzip(t, out)
	checkCloudConfigShape(t, doc, true)
	if !bytes.Contains(doc, []byte("    apiVersion: machineadm.io/v1alpha1\n")) {
		t.Errorf("the spec is not plain text in the decompressed document:\n%s", doc)
	}
	r := applyCloudConfig(t, out)
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
	checkMode(t, filepath.Join(r.root, CloudConfigStubPath), 0o700)
	checkMode(t, filepath.Join(r.root, LinuxSpecPath), 0o600)
}

// TestGzipOnlyCloudConfig: --gzip with any other format is an option error
// naming the flag.
func TestGzipOnlyCloudConfig(t *testing.T) {
	spec, cfg := loadExample(t, "worker")
	for _, f := range []Format{FormatIgnition, FormatShell, FormatPowerShell, FormatUnattend} {
		_, err := Render(spec, cfg, Options{Format: f, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}, Gzip: true})
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Flag != "--gzip" {
			t.Errorf("%s with Gzip: %v, want an OptionError for --gzip", f, err)
		}
	}
}
