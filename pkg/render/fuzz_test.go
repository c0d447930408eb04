package render

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// The renderer fuzz targets share one shape: arbitrary spec bytes (the
// renderers deliver a spec byte for byte, whatever it holds) and an
// arbitrary agent URL. Render must never panic; an input it refuses gives
// an *OptionError or a *SizeError; an output it produces is well-formed for
// its bootstrapper, carries the spec back unchanged when decoded the way
// the machine decodes it, and quotes the agent URL so that it reads back
// as the same string. Seeds: the documented examples and the regression
// inputs under testdata/fuzz/<target>. CI runs each briefly (make
// fuzz-short).

// fuzzSeeds adds each example with a few agent URLs.
func fuzzSeeds(f *testing.F) {
	for _, name := range []string{"worker", "control-plane-init", "control-plane-join"} {
		data, _ := loadExample(f, name)
		f.Add(data, testAgentURL)
	}
	f.Add(trickyBinary, "https://example.com/a'b\"c$(id)`x`?q=1&r=2#frag")
	f.Add([]byte("MACHINEADM_SPEC\n'\"\r\n"), "file:///opt/bin/machineadm")
	f.Add([]byte{}, "https://[::1]:8443/%27agent%E2%80%99")
	f.Add([]byte("\u2019'"), "https://example.com/\u2018it\u2019s\u201b")
}

// fuzzCfg is the loaded worker example, read once: Render uses the loaded
// spec only to look for inline secrets.
var (
	fuzzCfgOnce sync.Once
	fuzzCfg     *machineadm.MachineBootstrapConfig
)

// fuzzRender renders spec in format with agentURL; ok is false when the
// options were refused, which must be an *OptionError or *SizeError.
func fuzzRender(t *testing.T, format Format, spec []byte, agentURL string, gzip ...bool) (out []byte, ok bool) {
	t.Helper()
	fuzzCfgOnce.Do(func() { _, fuzzCfg = loadExample(t, "worker") })
	cfg := fuzzCfg
	o := Options{Format: format, Agent: AgentSource{URL: agentURL, SHA256: testAgentSHA256}, Gzip: len(gzip) > 0 && gzip[0]}
	out, err := Render(spec, cfg, o)
	if err != nil {
		var oe *OptionError
		var se *SizeError
		if !errors.As(err, &oe) && !errors.As(err, &se) {
			t.Fatalf("Render(%s): unexpected error %T: %v", format, err, err)
		}
		return nil, false
	}
	return out, true
}

// shellWord decodes a POSIX sh word made of single-quoted parts and \'.
func shellWord(t *testing.T, w string) string {
	t.Helper()
	var b strings.Builder
	for w != "" {
		switch {
		case strings.HasPrefix(w, `\'`):
			b.WriteByte('\'')
			w = w[2:]
		case w[0] == '\'':
			end := strings.IndexByte(w[1:], '\'')
			if end < 0 {
				t.Fatalf("unterminated quote in %q", w)
			}
			b.WriteString(w[1 : 1+end])
			w = w[2+end:]
		default:
			t.Fatalf("unquoted text in sh word: %q", w)
		}
	}
	return b.String()
}

var shGetAgent = regexp.MustCompile(`(?m)^\tget ('.*') "\$t"$`)
var shSpec = regexp.MustCompile(`(?s)<<'MACHINEADM_SPEC' \| gzip -dc >"\$w"\n(.*?)\nMACHINEADM_SPEC\n`)

// checkShell checks the sh stub's agent URL word and inline spec.
func checkShell(t *testing.T, out, spec []byte, agentURL string, inline bool) {
	t.Helper()
	if m := shGetAgent.FindSubmatch(out); m != nil {
		if got := shellWord(t, string(m[1])); got != agentURL {
			t.Fatalf("sh stub downloads %q, want %q", got, agentURL)
		}
	} else if !isFileURL(agentURL) {
		t.Fatalf("no agent download in the sh stub:\n%s", out)
	}
	if !inline {
		return
	}
	m := shSpec.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no inline spec in the sh stub")
	}
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(m[1]), "\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := gunzip(t, b); !bytes.Equal(got, spec) {
		t.Fatalf("sh stub spec is not byte-exact: %q, want %q", got, spec)
	}
}

func FuzzRenderShell(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, spec []byte, agentURL string) {
		out, ok := fuzzRender(t, FormatShell, spec, agentURL)
		if ok {
			checkShell(t, out, spec, agentURL, true)
		}
	})
}

func FuzzRenderCloudConfig(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, spec []byte, agentURL string) {
		out, ok := fuzzRender(t, FormatCloudConfig, spec, agentURL)
		if ok {
			checkFuzzCloudConfig(t, out, spec, agentURL, false)
		}
	})
}

// FuzzRenderCloudConfigGzip is FuzzRenderCloudConfig for render --gzip:
// the decompressed document must carry the spec and stub exactly, as
// plain text where plainText allows and gz+b64 otherwise.
func FuzzRenderCloudConfigGzip(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, spec []byte, agentURL string) {
		out, ok := fuzzRender(t, FormatCloudConfig, spec, agentURL, true)
		if ok {
			checkFuzzCloudConfig(t, gunzip(t, out), spec, agentURL, true)
		}
	})
}

// checkFuzzCloudConfig checks a rendered (decompressed) cloud-config: its
// header and shape, the spec byte for byte and the stub's agent URL.
func checkFuzzCloudConfig(t *testing.T, out, spec []byte, agentURL string, gzipped bool) {
	t.Helper()
	if !bytes.HasPrefix(out, []byte(cloudConfigHeader)) {
		t.Fatalf("no #cloud-config header")
	}
	var cc cloudConfig
	dec := yaml.NewDecoder(bytes.NewReader(out))
	dec.KnownFields(true)
	if err := dec.Decode(&cc); err != nil {
		t.Fatalf("cloud-config is not YAML of the expected shape: %v", err)
	}
	// With the agent in the image there is no stub: runcmd runs it.
	inImage := isFileURL(agentURL)
	if want := 2; inImage {
		want = 1
		if len(cc.WriteFiles) != want || len(cc.RunCmd) != 1 || !strings.Contains(fmt.Sprint(cc.RunCmd[0]), " bootstrap -f "+LinuxSpecPath) {
			t.Fatalf("runcmd of an in-image agent: %q", cc.RunCmd)
		}
	} else if len(cc.WriteFiles) != want || cc.WriteFiles[1].Path != CloudConfigStubPath {
		t.Fatalf("write_files: %+v", cc.WriteFiles)
	}
	if len(cc.WriteFiles) == 0 || cc.WriteFiles[0].Path != LinuxSpecPath {
		t.Fatalf("write_files: %+v", cc.WriteFiles)
	}
	decode := func(w writeFile) []byte {
		if gzipped && w.Encoding == "" {
			return []byte(w.Content)
		}
		if w.Encoding != "gz+b64" {
			t.Fatalf("%s: encoding %q", w.Path, w.Encoding)
		}
		b, err := base64.StdEncoding.DecodeString(string(w.Content))
		if err != nil {
			t.Fatal(err)
		}
		return gunzip(t, b)
	}
	if got := decode(cc.WriteFiles[0]); !bytes.Equal(got, spec) {
		t.Fatalf("cloud-config spec is not byte-exact")
	}
	if gzipped && (cc.WriteFiles[0].Encoding == "") != plainText(spec) {
		t.Fatalf("spec travels with encoding %q, plainText says %v", cc.WriteFiles[0].Encoding, plainText(spec))
	}
	if !inImage {
		checkShell(t, decode(cc.WriteFiles[1]), spec, agentURL, false)
	}
}

func FuzzRenderIgnition(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, spec []byte, agentURL string) {
		out, ok := fuzzRender(t, FormatIgnition, spec, agentURL)
		if !ok {
			return
		}
		cfg := parseIgnition(t, out) // the Ignition library's own parser and validation
		if got := ignitionFile(t, out, LinuxSpecPath); !bytes.Equal(got, spec) {
			t.Fatalf("Ignition spec file is not byte-exact")
		}
		if !isFileURL(agentURL) {
			if src := findFile(t, cfg, IgnitionAgentPath).Contents.Source; src == nil || *src != agentURL {
				t.Fatalf("agent source %v, want %q", src, agentURL)
			}
		}
	})
}

var psAgentParam = regexp.MustCompile(`(?m)^\t\[string\]\$AgentUrl = ('.*'),$`)

// psWord decodes a PowerShell verbatim string: quote characters
// (' and U+2018..U+201B) are doubled inside.
func psWord(t *testing.T, w string) string {
	t.Helper()
	rs := []rune(w)
	isQuote := func(r rune) bool { return r == '\'' || (r >= '\u2018' && r <= '\u201b') }
	if len(rs) < 2 || rs[0] != '\'' || rs[len(rs)-1] != '\'' {
		t.Fatalf("not a verbatim string: %q", w)
	}
	var b strings.Builder
	for i := 1; i < len(rs)-1; i++ {
		if isQuote(rs[i]) {
			if i+1 >= len(rs)-1 || !isQuote(rs[i+1]) {
				t.Fatalf("lone quote character in %q", w)
			}
			i++
		}
		b.WriteRune(rs[i])
	}
	return b.String()
}

// checkPowerShell checks the stub's agent URL parameter and inline spec.
func checkPowerShell(t *testing.T, out, spec []byte, agentURL string) {
	t.Helper()
	m := psAgentParam.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no AgentUrl parameter")
	}
	// A file URL becomes a local path (its scheme in any case: url.Parse
	// lower-cases it), any other URL is downloaded as given.
	if got := psWord(t, string(m[1])); got != agentURL && !isFileURL(agentURL) {
		t.Fatalf("PowerShell stub downloads %q, want %q", got, agentURL)
	}
	if got := powershellSpec(t, out); !bytes.Equal(got, spec) {
		t.Fatalf("PowerShell spec is not byte-exact")
	}
}

func FuzzRenderPowerShell(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, spec []byte, agentURL string) {
		if out, ok := fuzzRender(t, FormatPowerShell, spec, agentURL); ok {
			checkPowerShell(t, out, spec, agentURL)
		}
	})
}

var unattendChunk = regexp.MustCompile(`^cmd /c >>` + regexp.QuoteMeta(unattendB64) + ` echo ([A-Za-z0-9+/=]+)$`)

func FuzzRenderUnattend(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, spec []byte, agentURL string) {
		out, ok := fuzzRender(t, FormatUnattend, spec, agentURL)
		if !ok {
			return
		}
		var b64 strings.Builder
		for _, p := range parseUnattend(t, out) { // strict XML, Setup's limits
			if m := unattendChunk.FindStringSubmatch(p); m != nil {
				b64.WriteString(m[1])
			}
		}
		gz, err := base64.StdEncoding.DecodeString(b64.String())
		if err != nil {
			t.Fatalf("the script's base64 chunks do not decode: %v", err)
		}
		checkPowerShell(t, gunzip(t, gz), spec, agentURL)
	})
}

// isFileURL says whether raw parses as a file URL, the scheme in any case.
func isFileURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "file"
}
