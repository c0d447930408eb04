package render

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
)

// TestIgnitionValidators checks every example in every supported spec
// version with the Ignition library (Render itself fails on any report
// entry; here the newest parser also reads older versions) and with Debian's
// ignition-validate for the versions that binary knows.
func TestIgnitionValidators(t *testing.T) {
	iv := requireTool(t, "ignition-validate", "ignition")
	validated := map[string]bool{}
	for _, name := range []string{"worker", "control-plane-init", "control-plane-join"} {
		data, cfg := loadExample(t, name)
		for _, v := range IgnitionVersions() {
			t.Run(name+"/"+v, func(t *testing.T) {
				out := mustRender(t, data, cfg, Options{Format: FormatIgnition, IgnitionVersion: v, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}})
				if _, rpt, err := v3_5.ParseCompatibleVersion(out); err != nil || len(rpt.Entries) > 0 {
					t.Fatalf("ignition v3_5.ParseCompatibleVersion: %v %s", err, rpt)
				}
				path := filepath.Join(t.TempDir(), "config.ign")
				if err := os.WriteFile(path, out, 0o600); err != nil {
					t.Fatal(err)
				}
				res, err := exec.Command(iv, path).CombinedOutput()
				switch {
				case strings.Contains(string(res), "unsupported config version"):
					t.Logf("Debian's ignition-validate does not know spec %s; validated by the library only", v)
				case err != nil || len(res) > 0:
					t.Fatalf("ignition-validate: %v\n%s", err, res)
				default:
					validated[v] = true
				}
			})
		}
	}
	if !validated["3.1.0"] || !validated["3.3.0"] {
		t.Errorf("ignition-validate accepted only %v; it should know 3.1.0 to 3.3.0", validated)
	}
}

// parseIgnition reads a rendered config with the newest library types.
func parseIgnition(t *testing.T, out []byte) types.Config {
	t.Helper()
	cfg, rpt, err := v3_5.ParseCompatibleVersion(out)
	if err != nil {
		t.Fatalf("%v %s", err, rpt)
	}
	return cfg
}

func findFile(t *testing.T, cfg types.Config, path string) types.File {
	t.Helper()
	for _, f := range cfg.Storage.Files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("no file %s", path)
	return types.File{}
}

func TestIgnitionContent(t *testing.T) {
	data, cfg := loadExample(t, "worker")
	out := mustRender(t, data, cfg, Options{Format: FormatIgnition, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}})
	ign := parseIgnition(t, out)

	if ign.Ignition.Timeouts.HTTPTotal == nil || *ign.Ignition.Timeouts.HTTPTotal != FetchTimeoutSeconds {
		t.Errorf("ignition.timeouts.httpTotal = %v, want %d", ign.Ignition.Timeouts.HTTPTotal, FetchTimeoutSeconds)
	}
	agent := findFile(t, ign, IgnitionAgentPath)
	if *agent.Contents.Source != testAgentURL || *agent.Contents.Verification.Hash != "sha256-"+testAgentSHA256 || *agent.Mode != 0o755 {
		t.Errorf("agent file: source %s hash %s mode %o", *agent.Contents.Source, *agent.Contents.Verification.Hash, *agent.Mode)
	}
	if spec := findFile(t, ign, LinuxSpecPath); *spec.Mode != 0o600 {
		t.Errorf("spec mode %o, want 0600", *spec.Mode)
	}
	if got := string(ignitionFile(t, out, ignitionDigestPath)); got != testAgentSHA256+"  "+IgnitionAgentPath+"\n" {
		t.Errorf("digest file = %q", got)
	}
	if len(ign.Systemd.Units) != 1 {
		t.Fatalf("units: %+v", ign.Systemd.Units)
	}
	u := ign.Systemd.Units[0]
	if u.Name != IgnitionUnitName || u.Enabled == nil || !*u.Enabled || *u.Contents != SystemdUnit(IgnitionAgentPath, LinuxSpecPath) {
		t.Errorf("unit %s enabled %v contents %q", u.Name, u.Enabled, *u.Contents)
	}
	if len(u.Dropins) != 1 || !strings.Contains(*u.Dropins[0].Contents, "sha256sum --check --quiet "+ignitionDigestPath) {
		t.Errorf("drop-ins: %+v", u.Dropins)
	}

	// With a payload URL Ignition fetches the spec and checks its hash.
	sum := sha256Hex(data)
	out = mustRender(t, data, cfg, Options{Format: FormatIgnition, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}, Payload: &PayloadSource{URL: testPayloadURL, SHA256: sum}})
	spec := findFile(t, parseIgnition(t, out), LinuxSpecPath)
	if *spec.Contents.Source != testPayloadURL || *spec.Contents.Verification.Hash != "sha256-"+sum {
		t.Errorf("payload spec file: %s %s", *spec.Contents.Source, *spec.Contents.Verification.Hash)
	}
}

// TestSystemdUnit compares contrib/systemd/machineadm.service with the
// unit the renderer embeds and checks the unit and the verification drop-in
// with `systemd-analyze verify`.
func TestSystemdUnit(t *testing.T) {
	unit := SystemdUnit(IgnitionAgentPath, LinuxSpecPath)
	compareOrUpdate(t, filepath.Join(repoRoot(t), "contrib", "systemd", IgnitionUnitName), []byte(unit))

	sa := requireTool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	agent := filepath.Join(dir, "machineadm")
	if err := os.WriteFile(agent, []byte(testAgentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	data, cfg := loadExample(t, "worker")
	out := mustRender(t, data, cfg, Options{Format: FormatIgnition, Agent: AgentSource{URL: "file://" + agent, SHA256: sha256Hex([]byte(testAgentScript))}})
	u := parseIgnition(t, out).Systemd.Units[0]
	if err := os.WriteFile(filepath.Join(dir, u.Name), []byte(*u.Contents), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, u.Name+".d"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The drop-in of a signed download (its agent path does not exist
	// here) checks the digest and the signature.
	signed := mustRender(t, data, cfg, Options{Format: FormatIgnition, Agent: AgentSource{
		URL: testAgentURL, SHA256: testAgentSHA256, SignatureURL: testAgentURL + ".sig", PublicKey: []byte(testPublicKeyPEM)}})
	dropins := parseIgnition(t, signed).Systemd.Units[0].Dropins
	if len(dropins) != 1 || strings.Count(*dropins[0].Contents, "ExecStartPre=") != 2 {
		t.Fatalf("signed drop-ins: %+v", dropins)
	}
	for _, d := range dropins {
		if err := os.WriteFile(filepath.Join(dir, u.Name+".d", d.Name), []byte(*d.Contents), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(sa, "verify", "--man=no", filepath.Join(dir, u.Name))
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":")
	res, err := cmd.CombinedOutput()
	if err != nil || len(res) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, res)
	}
}

func TestIgnitionVersionOption(t *testing.T) {
	for in, want := range map[string]string{"": DefaultIgnitionVersion, "3.3": "3.3.0", "v3.5.0": "3.5.0"} {
		if got, err := ignitionVersion(in); err != nil || got != want {
			t.Errorf("ignitionVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"2.3", "3.0", "3.6.0-experimental", "x"} {
		if _, err := ignitionVersion(bad); err == nil {
			t.Errorf("ignitionVersion(%q) accepted", bad)
		}
	}
	data, cfg := loadExample(t, "worker")
	_, err := Render(data, cfg, Options{Format: FormatShell, IgnitionVersion: "3.4", Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}})
	if err == nil {
		t.Error("--ignition-version accepted for --format shell")
	}
	out := mustRender(t, data, cfg, Options{Format: FormatIgnition, IgnitionVersion: "3.2", Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}})
	var head struct{ Ignition struct{ Version string } }
	if err := json.Unmarshal(out, &head); err != nil || head.Ignition.Version != "3.2.0" {
		t.Errorf("version %q, %v", head.Ignition.Version, err)
	}
}
