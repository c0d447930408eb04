package render

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellStubAgentCA: an https agent server with a private CA (the
// management cluster's agent server) is trusted through CACert, for the
// agent and its signature, with curl and with wget; without it the
// download fails and nothing runs.
func TestShellStubAgentCA(t *testing.T) {
	if _, err := lookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	spec, _ := loadExample(t, "worker")
	agent := []byte(testAgentScript)
	key := testSigner(t)
	files := map[string][]byte{"/agents/machineadm-linux-amd64": agent, "/agents/machineadm-linux-amd64.sig": sign(t, key, agent)}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	src := AgentSource{URL: srv.URL + "/agents/machineadm-linux-amd64", SHA256: sha256Hex(agent),
		SignatureURL: srv.URL + "/agents/machineadm-linux-amd64.sig", PublicKey: publicPEM(t, key), CACert: ca}

	script := shellFor(t, spec, Options{Agent: src})
	r := runStub(t, script)
	checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
	noTemp(t, filepath.Join(r.root, LinuxAgentPath))

	t.Run("wget", func(t *testing.T) {
		bin := wgetOnlyPath(t)
		r := runStub(t, script, "PATH="+bin)
		checkBootstrapped(t, r, filepath.Join(r.root, LinuxAgentPath), spec)
	})

	src.CACert = nil
	r = runStub(t, shellFor(t, spec, Options{Agent: src}))
	if r.exitCode == 0 || r.ran() {
		t.Fatalf("stub exit %d, agent ran %v without the CA", r.exitCode, r.ran())
	}
	wantStderr(t, r, "attempt 1 failed: curl: (60)")
}

// wgetOnlyPath is a PATH directory with the stub's tools and wget, no curl.
func wgetOnlyPath(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range []string{"sh", "date", "sha256sum", "cut", "mkdir", "mv", "chmod", "rm", "base64", "gzip", "wget", "sleep", "cp", "printf", "cat", "openssl"} {
		p, err := lookPath(tool)
		if err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// TestAgentCAOptions: the CA reaches Ignition's trust; it is refused for
// Windows formats, an agent in the image, and anything but PEM
// certificates.
func TestAgentCAOptions(t *testing.T) {
	data, cfg := loadExample(t, "worker")
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	src := AgentSource{URL: testAgentURL, SHA256: testAgentSHA256, CACert: ca}
	out := mustRender(t, data, cfg, Options{Format: FormatIgnition, Agent: src})
	ign := parseIgnition(t, out)
	if cas := ign.Ignition.Security.TLS.CertificateAuthorities; len(cas) != 1 || !strings.HasPrefix(*cas[0].Source, "data:;base64,") {
		t.Errorf("certificateAuthorities %v", cas)
	}
	for name, o := range map[string]Options{
		"powershell":  {Format: FormatPowerShell, Agent: src},
		"in image":    {Format: FormatShell, Agent: AgentSource{URL: "file:///usr/bin/machineadm", CACert: ca}},
		"private key": {Format: FormatShell, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256, CACert: []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")}},
		"not pem":     {Format: FormatShell, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256, CACert: []byte("hello")}},
	} {
		var oe *OptionError
		if _, err := Render(data, cfg, o); !errors.As(err, &oe) || oe.Flag != "--agent-ca" {
			t.Errorf("%s: %v, want an --agent-ca OptionError", name, err)
		}
	}
}
