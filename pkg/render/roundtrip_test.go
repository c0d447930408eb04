package render

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// trickyBinary is file content that is not UTF-8 and holds NUL, CR and the
// stub's own heredoc terminator.
var trickyBinary = []byte("\xff\xfe\x00\x80\xc3\x28 MACHINEADM_SPEC\r\n\x1b[0m")

// trickyText is file content with every character that breaks naive
// quoting: both quotes, a YAML comment, a Jinja/Go template, a YAML
// document separator, CRLF line ends and a heredoc terminator.
const trickyText = "it's \"quoted\" # not a comment\r\n{{ not.a.template }} {% if x %}\r\n---\r\nMACHINEADM_SPEC\r\n$(touch /tmp/pwned) `id` ${HOME}\r\n"

// trickySpec is the worker example with files whose contents are tricky.
func trickySpec(t *testing.T) []byte {
	t.Helper()
	base, _ := loadExample(t, "worker")
	q, err := json.Marshal(trickyText)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(base), "  host:\n", "  host:\n"+
		"    files:\n"+
		"      - path: /etc/demo/tricky.txt\n"+
		"        content: "+string(q)+"\n"+
		"      - path: /etc/demo/block.txt\n"+
		"        content: |\n"+
		"          # looks like a comment\n"+
		"          ---\n"+
		"          {{ .Values.x }} '\"\n"+
		"      - path: /etc/demo/binary.bin\n"+
		"        encoding: base64\n"+
		"        content: "+base64.StdEncoding.EncodeToString(trickyBinary)+"\n", 1)
	return []byte(doc)
}

// checkTrickyFiles loads the delivered spec and checks each file's content.
func checkTrickyFiles(t *testing.T, delivered []byte) {
	t.Helper()
	cfg := loadSpec(t, delivered)
	want := map[string][]byte{
		"/etc/demo/tricky.txt": []byte(trickyText),
		"/etc/demo/block.txt":  []byte("# looks like a comment\n---\n{{ .Values.x }} '\"\n"),
		"/etc/demo/binary.bin": trickyBinary,
	}
	for _, f := range cfg.Spec.Host.Files {
		got, err := machineadm.DecodeContent(f.Content, f.Encoding)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[f.Path]) {
			t.Errorf("%s: got %q, want %q", f.Path, got, want[f.Path])
		}
		delete(want, f.Path)
	}
	if len(want) > 0 {
		t.Errorf("files missing from the delivered spec: %v", want)
	}
}

// TestRoundTripStubs runs the shell stub and the cloud-config (through
// cloud-init's write_files) with specs whose bytes are hostile: the tricky
// spec with LF and with CRLF line ends, and raw bytes that are not even
// UTF-8. Each must reach the agent byte for byte.
func TestRoundTripStubs(t *testing.T) {
	tricky := trickySpec(t)
	crlf := bytes.ReplaceAll(tricky, []byte("\n"), []byte("\r\n"))
	raw := append(append([]byte{}, trickyBinary...), tricky...)
	_, workerCfg := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	srv := newAgentServer(t, map[string][]byte{"/agent": agent})
	o := Options{Agent: AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex(agent)}}

	cases := map[string]struct {
		spec []byte
		cfg  *machineadm.MachineBootstrapConfig
		load bool
	}{
		"tricky-lf":   {tricky, loadSpec(t, tricky), true},
		"tricky-crlf": {crlf, loadSpec(t, crlf), true},
		"raw-bytes":   {raw, workerCfg, false},
	}
	for name, c := range cases {
		t.Run(name+"/shell", func(t *testing.T) {
			o := o
			o.Format = FormatShell
			r := runStub(t, mustRender(t, c.spec, c.cfg, o))
			checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), c.spec)
			if c.load {
				got, _ := os.ReadFile(filepath.Join(r.record, "spec"))
				checkTrickyFiles(t, got)
			}
		})
		t.Run(name+"/cloud-config", func(t *testing.T) {
			o := o
			o.Format = FormatCloudConfig
			r := applyCloudConfig(t, mustRender(t, c.spec, c.cfg, o))
			checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), c.spec)
		})
		t.Run(name+"/cloud-config-gzip", func(t *testing.T) {
			o := o
			o.Format, o.Gzip = FormatCloudConfig, true
			out := mustRender(t, c.spec, c.cfg, o)
			r := applyCloudConfig(t, out)
			checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), c.spec)
			// Text YAML carries exactly travels plain; CRLF and raw bytes
			// keep gz+b64.
			var cc cloudConfig
			if err := yaml.Unmarshal(gunzip(t, out), &cc); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: "", false: "gz+b64"}[name == "tricky-lf"]; string(cc.WriteFiles[0].Encoding) != want {
				t.Errorf("spec entry encoding %q, want %q", cc.WriteFiles[0].Encoding, want)
			}
		})
		t.Run(name+"/ignition", func(t *testing.T) {
			out := mustRender(t, c.spec, c.cfg, Options{Format: FormatIgnition, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}})
			if got := ignitionFile(t, out, LinuxSpecPath); !bytes.Equal(got, c.spec) {
				t.Errorf("Ignition spec file is not byte-exact:\n got %q\nwant %q", got, c.spec)
			}
		})
		t.Run(name+"/powershell", func(t *testing.T) {
			out := mustRender(t, c.spec, c.cfg, Options{Format: FormatPowerShell, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}})
			if got := powershellSpec(t, out); !bytes.Equal(got, c.spec) {
				t.Errorf("PowerShell spec is not byte-exact:\n got %q\nwant %q", got, c.spec)
			}
		})
	}
}

// ignitionFile returns the decoded inline content of the file at path in
// an Ignition config, decompressing gzip as Ignition does.
func ignitionFile(t *testing.T, out []byte, path string) []byte {
	t.Helper()
	var cfg struct {
		Storage struct {
			Files []struct {
				Path     string
				Contents struct{ Source, Compression string }
			}
		}
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, f := range cfg.Storage.Files {
		if f.Path != path {
			continue
		}
		data, ok := strings.CutPrefix(f.Contents.Source, "data:;base64,")
		if !ok {
			t.Fatalf("%s: source %q is not a base64 data URL", path, f.Contents.Source)
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Fatal(err)
		}
		if f.Contents.Compression == "gzip" {
			b = gunzip(t, b)
		}
		return b
	}
	t.Fatalf("no file %s in the Ignition config", path)
	return nil
}

var psSpecParam = regexp.MustCompile(`(?s)\[string\]\$SpecGzipBase64 = '([^']*)'`)

// powershellSpec decodes the spec carried by a PowerShell stub the way the
// script does: base64 (white space ignored), then gzip.
func powershellSpec(t *testing.T, out []byte) []byte {
	t.Helper()
	m := psSpecParam.FindSubmatch(out)
	if m == nil {
		t.Fatal("no SpecGzipBase64 parameter in the script")
	}
	b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(m[1])), ""))
	if err != nil {
		t.Fatal(err)
	}
	return gunzip(t, b)
}

func gunzip(t *testing.T, b []byte) []byte {
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
