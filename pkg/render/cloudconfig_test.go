package render

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// requireTool returns the path of a validator binary. Without it the test
// is skipped on a developer machine and fails in CI (CI=true), which must
// install it (see docs/render.md).
func requireTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: apt-get install -y %s", name, pkg)
		}
		t.Skipf("%s not installed (apt-get install -y %s)", name, pkg)
	}
	return p
}

// cloudInitPython is the interpreter cloud-init runs under on Debian.
func cloudInitPython(t *testing.T) string {
	t.Helper()
	requireTool(t, "cloud-init", "cloud-init")
	return "/usr/bin/python3"
}

// TestCloudConfigSchema validates every rendered cloud-config with
// cloud-init's own schema validator (`cloud-init schema --config-file`).
func TestCloudConfigSchema(t *testing.T) {
	ci := requireTool(t, "cloud-init", "cloud-init")
	for _, name := range []string{"worker", "control-plane-init", "control-plane-join"} {
		data, cfg := loadExample(t, name)
		for variant, o := range map[string]Options{
			"inline":   {Format: FormatCloudConfig, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}},
			"payload":  {Format: FormatCloudConfig, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}, Payload: &PayloadSource{URL: testPayloadURL, SHA256: sha256Hex(data)}},
			"in-image": {Format: FormatCloudConfig, Agent: AgentSource{URL: "file:///usr/local/bin/machineadm", SHA256: testAgentSHA256}},
			"gzip":     {Format: FormatCloudConfig, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}, Gzip: true},
		} {
			t.Run(name+"/"+variant, func(t *testing.T) {
				out := mustRender(t, data, cfg, o)
				if o.Gzip {
					out = gunzip(t, out) // cloud-init's schema reads the decompressed document
				}
				checkCloudConfigShape(t, out, o.Gzip)
				path := filepath.Join(t.TempDir(), "user-data")
				if err := os.WriteFile(path, out, 0o600); err != nil {
					t.Fatal(err)
				}
				res, err := exec.Command(ci, "schema", "--config-file", path).CombinedOutput()
				if err != nil || !strings.Contains(string(res), "Valid cloud-config") {
					t.Fatalf("cloud-init schema: %v\n%s", err, res)
				}
			})
		}
	}
}

// checkCloudConfigShape checks the rules the renderer promises: the
// "#cloud-config" header and never a Jinja template header, only the
// write_files and runcmd modules, every file gz+b64-encoded (plain text
// in a gzip-compressed cloud-config, whose decompressed form out is then).
func checkCloudConfigShape(t *testing.T, out []byte, gzipped bool) {
	t.Helper()
	if !strings.HasPrefix(string(out), "#cloud-config\n") {
		t.Errorf("first line is not #cloud-config")
	}
	if strings.Contains(string(out), "## template") {
		t.Errorf("output contains a template header")
	}
	var doc map[string]any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	for k := range doc {
		if k != "write_files" && k != "runcmd" {
			t.Errorf("module %q used; only write_files and runcmd are allowed", k)
		}
	}
	var cc cloudConfig
	if err := yaml.Unmarshal(out, &cc); err != nil {
		t.Fatal(err)
	}
	for _, f := range cc.WriteFiles {
		if want := "gz+b64"; !gzipped && string(f.Encoding) != want || gzipped && f.Encoding != "" {
			t.Errorf("%s has encoding %q (gzip-compressed cloud-config: %v)", f.Path, f.Encoding, gzipped)
		}
	}
}

// applyCloudConfig writes the cloud-config's files under a new root with
// cloud-init's write_files code and runs its runcmd the way cc_runcmd does.
func applyCloudConfig(t *testing.T, out []byte, env ...string) *stubRun {
	t.Helper()
	py := cloudInitPython(t)
	root, record, work := t.TempDir(), t.TempDir(), t.TempDir()
	cfgPath, script := filepath.Join(work, "user-data"), filepath.Join(work, "runcmd")
	if err := os.WriteFile(cfgPath, out, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := exec.Command(py, filepath.Join("testdata", "tools", "cloudinit_apply.py"), cfgPath, root, script).CombinedOutput()
	if err != nil {
		t.Fatalf("applying the cloud-config with cloud-init's modules: %v\n%s", err, res)
	}
	return runScript(t, root, record, []string{"/bin/sh", script}, env...)
}

// TestCloudConfigRunsVerifiedAgent applies a rendered cloud-config with
// cloud-init's code and runs the stub against a local server.
func TestCloudConfigRunsVerifiedAgent(t *testing.T) {
	spec, cfg := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	srv := newAgentServer(t, map[string][]byte{"/agent": agent, "/spec.yaml": spec})
	good := AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex(agent)}

	r := applyCloudConfig(t, mustRender(t, spec, cfg, Options{Format: FormatCloudConfig, Agent: good}))
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
	checkMode(t, filepath.Join(r.root, CloudConfigStubPath), 0o700)

	payload := &PayloadSource{URL: srv.URL + "/spec.yaml", SHA256: sha256Hex(spec)}
	r = applyCloudConfig(t, mustRender(t, spec, cfg, Options{Format: FormatCloudConfig, Agent: good, Payload: payload}))
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)

	bad := AgentSource{URL: srv.URL + "/agent", SHA256: sha256Hex([]byte("other"))}
	r = applyCloudConfig(t, mustRender(t, spec, cfg, Options{Format: FormatCloudConfig, Agent: bad}))
	if r.exitCode == 0 || r.ran() {
		t.Fatalf("wrong digest: exit %d, agent ran %v", r.exitCode, r.ran())
	}
	noFile(t, filepath.Join(r.root, LinuxAgentPath))
}

// TestCloudConfigAgentInImage: with the agent in the image and the spec
// inline there is no stub; runcmd runs the agent itself, after
// `sha256sum -c` when a digest is pinned. A payload URL still needs the
// stub to fetch and check the spec.
func TestCloudConfigAgentInImage(t *testing.T) {
	spec, cfg := loadExample(t, "worker")
	const agent = "/opt/machine adm/machineadm"
	for _, c := range []struct {
		name   string
		o      Options
		runcmd [][]string
		stub   bool
	}{
		{"no digest", Options{Agent: AgentSource{URL: "file://" + strings.ReplaceAll(agent, " ", "%20")}},
			[][]string{{agent, "bootstrap", "-f", LinuxSpecPath}}, false},
		{"digest", Options{Agent: AgentSource{URL: "file://" + strings.ReplaceAll(agent, " ", "%20"), SHA256: testAgentSHA256}},
			[][]string{{"/bin/sh", "-c", "echo '" + testAgentSHA256 + "  " + agent + "' | sha256sum -c --quiet && exec '" + agent + "' bootstrap -f " + LinuxSpecPath}}, false},
		{"payload", Options{Agent: AgentSource{URL: "file:///usr/bin/machineadm"}, Payload: &PayloadSource{URL: testPayloadURL, SHA256: sha256Hex(spec)}},
			[][]string{{"/bin/sh", CloudConfigStubPath}}, true},
	} {
		c.o.Format = FormatCloudConfig
		out := mustRender(t, spec, cfg, c.o)
		checkCloudConfigShape(t, out, false)
		var cc cloudConfig
		if err := yaml.Unmarshal(out, &cc); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(cc.RunCmd) != fmt.Sprint(c.runcmd) {
			t.Errorf("%s: runcmd %q, want %q", c.name, cc.RunCmd, c.runcmd)
		}
		stub := false
		for _, f := range cc.WriteFiles {
			stub = stub || f.Path == CloudConfigStubPath
		}
		if stub != c.stub {
			t.Errorf("%s: stub written %v, want %v", c.name, stub, c.stub)
		}
	}
}
