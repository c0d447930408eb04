package render

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestCloudbaseInit renders the worker example as a cloudbase-init
// cloud-config (inline spec, payload URL, agent in the image) and checks
// it with cloud-init's own schema validator, keeps to the keys
// cloudbase-init implements, carries the spec and the powershell format's
// stub byte for byte, and runs the stub the way the powershell format's
// user data does.
func TestCloudbaseInit(t *testing.T) {
	data, cfg := loadExample(t, "worker")
	agent := AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}
	for variant, o := range map[string]Options{
		"inline":   {Format: FormatCloudbaseInit, Agent: agent},
		"payload":  {Format: FormatCloudbaseInit, Agent: agent, Payload: &PayloadSource{URL: testPayloadURL, SHA256: sha256Hex(data)}},
		"in-image": {Format: FormatCloudbaseInit, Agent: AgentSource{URL: "file:///C:/machineadm/machineadm.exe", SHA256: testAgentSHA256}},
	} {
		t.Run(variant, func(t *testing.T) {
			out := mustRender(t, data, cfg, o)
			if !strings.HasPrefix(string(out), "#cloud-config\n") || strings.Contains(string(out), "## template") {
				t.Fatalf("not a plain #cloud-config document:\n%s", out)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			for k := range doc {
				if !slices.Contains(CloudbaseInitKeys, k) || (k != "write_files" && k != "runcmd") {
					t.Errorf("key %q: cloudbase-init's format uses write_files and runcmd only", k)
				}
			}
			files := map[string][]byte{}
			for _, f := range doc["write_files"].([]any) {
				entry := f.(map[string]any)
				for k := range entry {
					if !slices.Contains(CloudbaseInitFileKeys, k) {
						t.Errorf("write_files key %q is not one cloudbase-init reads", k)
					}
				}
				if entry["encoding"] != "gz+b64" {
					t.Errorf("%v: encoding %v, want gz+b64", entry["path"], entry["encoding"])
				}
				files[entry["path"].(string)] = gunzipB64(t, entry["content"].(string))
			}
			// The stub is the powershell format's, told the spec is
			// already at its path when write_files writes it.
			ps := o
			ps.Format = FormatPowerShell
			script, ok := files[CloudbaseInitStubPath]
			if !ok {
				t.Fatalf("no %s in write_files: %v", CloudbaseInitStubPath, doc)
			}
			if o.Payload != nil {
				if want := mustRender(t, data, cfg, ps); !bytes.Equal(script, want) {
					t.Errorf("the stub differs from --format powershell's")
				}
				if _, ok := files[WindowsSpecPath]; ok {
					t.Errorf("the spec is written although it comes from the payload URL")
				}
			} else {
				if !bytes.Equal(files[WindowsSpecPath], data) {
					t.Errorf("%s does not hold the spec byte for byte", WindowsSpecPath)
				}
				if !strings.Contains(string(script), "[string]$SpecGzipBase64 = ''") {
					t.Errorf("the stub carries the spec again instead of reading %s", WindowsSpecPath)
				}
			}
			if !strings.HasPrefix(string(script), "#ps1_sysnative\n") || !strings.Contains(string(script), "icacls.exe $specDir /inheritance:r") {
				t.Errorf("the written script is not the PowerShell stub")
			}
			want := []any{`powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "C:\ProgramData\machineadm\firstboot.ps1"`}
			if got, _ := doc["runcmd"].([]any); !slices.Equal(got, want) {
				t.Errorf("runcmd = %q, want %q", got, want)
			}
			validateCloudInitSchema(t, out)
		})
	}
}

// validateCloudInitSchema runs cloud-init's schema validator on out.
func validateCloudInitSchema(t *testing.T, out []byte) {
	t.Helper()
	ci := requireTool(t, "cloud-init", "cloud-init")
	path := filepath.Join(t.TempDir(), "user-data")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := exec.Command(ci, "schema", "--config-file", path).CombinedOutput()
	if err != nil || !strings.Contains(string(res), "Valid cloud-config") {
		t.Fatalf("cloud-init schema: %v\n%s", err, res)
	}
}

// gunzipB64 undoes gz+b64.
func gunzipB64(t *testing.T, s string) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	z, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
