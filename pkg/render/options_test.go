package render

import (
	"errors"
	"testing"
)

func TestOptionErrors(t *testing.T) {
	data, cfg := loadExample(t, "worker")
	ok := AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}
	cases := map[string]struct {
		o    Options
		flag string
	}{
		"no format":             {Options{Agent: ok}, "--format"},
		"unknown format":        {Options{Format: "butane", Agent: ok}, "--format"},
		"no agent url":          {Options{Format: FormatShell}, "--agent-url"},
		"ftp agent":             {Options{Format: FormatShell, Agent: AgentSource{URL: "ftp://x/machineadm", SHA256: testAgentSHA256}}, "--agent-url"},
		"no host":               {Options{Format: FormatShell, Agent: AgentSource{URL: "https:///machineadm", SHA256: testAgentSHA256}}, "--agent-url"},
		"port out of range":     {Options{Format: FormatShell, Agent: AgentSource{URL: "https://x:99999/machineadm", SHA256: testAgentSHA256}}, "--agent-url"},
		"port zero":             {Options{Format: FormatShell, Agent: AgentSource{URL: "https://x:0/machineadm", SHA256: testAgentSHA256}}, "--agent-url"},
		"payload port":          {Options{Format: FormatShell, Agent: ok, Payload: &PayloadSource{URL: "https://specs.example:65536/s.yaml", SHA256: testAgentSHA256}}, "--payload-url"},
		"oci port out of range": {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://registry.example:99999/machineadm@sha256:" + testAgentSHA256}}, "--agent-url"},
		"space in url":          {Options{Format: FormatShell, Agent: AgentSource{URL: "https://x/a b", SHA256: testAgentSHA256}}, "--agent-url"},
		"newline in url":        {Options{Format: FormatShell, Agent: AgentSource{URL: "https://x/a\nrm -rf /", SHA256: testAgentSHA256}}, "--agent-url"},
		"non-utf8 url":          {Options{Format: FormatIgnition, Agent: AgentSource{URL: "http://0\x8b", SHA256: testAgentSHA256}}, "--agent-url"},
		"non-ascii url":         {Options{Format: FormatPowerShell, Agent: AgentSource{URL: "https://example.com/\u2019agent", SHA256: testAgentSHA256}}, "--agent-url"},
		"non-ascii payload":     {Options{Format: FormatShell, Agent: ok, Payload: &PayloadSource{URL: "https://specs.example/é.yaml", SHA256: testAgentSHA256}}, "--payload-url"},
		"relative file url":     {Options{Format: FormatShell, Agent: AgentSource{URL: "file:machineadm"}}, "--agent-url"},
		"file url with host":    {Options{Format: FormatShell, Agent: AgentSource{URL: "file://server/machineadm"}}, "--agent-url"},
		"file url of a dir":     {Options{Format: FormatPowerShell, Agent: AgentSource{URL: "fiLe:/"}}, "--agent-url"},
		"file url trailing /":   {Options{Format: FormatShell, Agent: AgentSource{URL: "file:///opt/bin/"}}, "--agent-url"},
		"file url dot-dot":      {Options{Format: FormatShell, Agent: AgentSource{URL: "file:///opt/../etc/machineadm"}}, "--agent-url"},
		"file url double /":     {Options{Format: FormatShell, Agent: AgentSource{URL: "file:///opt//machineadm"}}, "--agent-url"},
		"http without digest":   {Options{Format: FormatShell, Agent: AgentSource{URL: testAgentURL}}, "--agent-sha256"},
		"short digest":          {Options{Format: FormatShell, Agent: AgentSource{URL: testAgentURL, SHA256: "abc"}}, "--agent-sha256"},
		"payload no digest":     {Options{Format: FormatShell, Agent: ok, Payload: &PayloadSource{URL: testPayloadURL}}, "--payload-sha256"},
		"payload file url":      {Options{Format: FormatShell, Agent: ok, Payload: &PayloadSource{URL: "file:///spec.yaml", SHA256: testAgentSHA256}}, "--payload-url"},
		"ignition odd path":     {Options{Format: FormatIgnition, Agent: AgentSource{URL: "file:///opt/my%20bin/machineadm"}}, "--agent-url"},
		"ignition version 2.3":  {Options{Format: FormatIgnition, IgnitionVersion: "2.3.0", Agent: ok}, "--ignition-version"},
		// Registry sources: malformed, not pinned by a sha256 digest, or a
		// digest flag that disagrees with the reference.
		"oci without digest":      {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://registry.example/machineadm/agent:v1", SHA256: testAgentSHA256}}, "--agent-url"},
		"oci tag and digest":      {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://registry.example/machineadm/agent:v1@sha256:" + testAgentSHA256}}, "--agent-url"},
		"oci without repository":  {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://registry.example@sha256:" + testAgentSHA256}}, "--agent-url"},
		"oci without registry":    {Options{Format: FormatShell, Agent: AgentSource{URL: "oci:///agent@sha256:" + testAgentSHA256}}, "--agent-url"},
		"oci upper-case repo":     {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://registry.example/Machineadm@sha256:" + testAgentSHA256}}, "--agent-url"},
		"oci short digest":        {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://registry.example/machineadm@sha256:abc"}}, "--agent-url"},
		"oci sha512":              {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://registry.example/machineadm@sha512:" + testAgentSHA256 + testAgentSHA256}}, "--agent-url"},
		"oci query":               {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://registry.example/machineadm@sha256:" + testAgentSHA256 + "?x=1"}}, "--agent-url"},
		"oci user information":    {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://robot@registry.example/machineadm@sha256:" + testAgentSHA256}}, "--agent-url"},
		"oci space":               {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://registry.example/machine adm@sha256:" + testAgentSHA256}}, "--agent-url"},
		"oci digest disagrees":    {Options{Format: FormatShell, Agent: AgentSource{URL: "oci://registry.example/machineadm@sha256:" + testAgentSHA256, SHA256: sha256Hex([]byte("x"))}}, "--agent-sha256"},
		"blob url digest differs": {Options{Format: FormatShell, Agent: AgentSource{URL: "http://10.0.0.1:5000/v2/machineadm/blobs/sha256:" + testAgentSHA256, SHA256: sha256Hex([]byte("x"))}}, "--agent-sha256"},
		"blob url bad repository": {Options{Format: FormatShell, Agent: AgentSource{URL: "http://10.0.0.1:5000/v2/Machine_/blobs/sha256:" + testAgentSHA256}}, "--agent-url"},
		"oci signature malformed": {Options{Format: FormatShell, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256, SignatureURL: "oci://registry.example/sig:latest", PublicKey: []byte(testPublicKeyPEM)}}, "--agent-signature-url"},
		"oci signature windows":   {Options{Format: FormatPowerShell, Agent: AgentSource{URL: "oci://registry.example/machineadm@sha256:" + testAgentSHA256, SignatureURL: "oci://registry.example/machineadm@sha256:" + testAgentSHA256, PublicKey: []byte(testPublicKeyPEM)}}, "--agent-signature-url"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Render(data, cfg, c.o)
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Flag != c.flag {
				t.Fatalf("err = %v, want an OptionError for %s", err, c.flag)
			}
		})
	}
	if _, err := Render(data, nil, Options{Format: FormatShell, Agent: ok}); err == nil {
		t.Error("Render without the loaded spec succeeded")
	}
}

func TestOptionNormalisation(t *testing.T) {
	r, err := resolve(Options{Format: FormatShell, Agent: AgentSource{URL: testAgentURL, SHA256: "sha256:" + upper(testAgentSHA256)}})
	if err != nil || r.Agent.SHA256 != testAgentSHA256 {
		t.Errorf("digest %q, %v", r.Agent.SHA256, err)
	}
	r, err = resolve(Options{Format: FormatPowerShell, Agent: AgentSource{URL: "file:///C:/Program%20Files/machineadm/machineadm.exe"}})
	if err != nil || r.agentPath != `C:\Program Files\machineadm\machineadm.exe` {
		t.Errorf("windows path %q, %v", r.agentPath, err)
	}
}

// TestRegistrySourceResolution: an oci:// reference becomes the blob's
// HTTPS URL with its digest pinned (docker.io through registry-1.docker.io,
// a registry port kept); an http(s) blob URL is kept as it is and pinned
// by its path's digest; any other URL is not a registry source.
func TestRegistrySourceResolution(t *testing.T) {
	d := testAgentSHA256
	cases := map[string]struct{ url, sha string }{
		"oci://ghcr.io/machineadm/agent@sha256:" + d:                  {"https://ghcr.io/v2/machineadm/agent/blobs/sha256:" + d, d},
		"oci://docker.io/machineadm/agent@sha256:" + d:                {"https://registry-1.docker.io/v2/machineadm/agent/blobs/sha256:" + d, d},
		"oci://docker.io/alpine@sha256:" + d:                          {"https://registry-1.docker.io/v2/library/alpine/blobs/sha256:" + d, d},
		"oci://index.docker.io/alpine@sha256:" + d:                    {"https://registry-1.docker.io/v2/library/alpine/blobs/sha256:" + d, d},
		"oci://10.0.0.1:5000/a/b/c@sha256:" + d:                       {"https://10.0.0.1:5000/v2/a/b/c/blobs/sha256:" + d, d},
		"OCI://localhost:5000/agent@sha256:" + d:                      {"https://localhost:5000/v2/agent/blobs/sha256:" + d, d},
		"http://10.0.0.1:5000/v2/machine-adm/agent/blobs/sha256:" + d: {"http://10.0.0.1:5000/v2/machine-adm/agent/blobs/sha256:" + d, d},
	}
	for in, want := range cases {
		r, err := resolve(Options{Format: FormatShell, Agent: AgentSource{URL: in}})
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if r.Agent.URL != want.url || r.Agent.SHA256 != want.sha || !r.registry {
			t.Errorf("%s: URL %q digest %q registry %v, want %q %q true", in, r.Agent.URL, r.Agent.SHA256, r.registry, want.url, want.sha)
		}
	}
	for _, in := range []string{testAgentURL, "https://example.com/v2/agent/blobs/sha256:" + d + "?x=1", "https://example.com/v2/agent/manifests/sha256:" + d} {
		r, err := resolve(Options{Format: FormatShell, Agent: AgentSource{URL: in, SHA256: d}})
		if err != nil || r.registry {
			t.Errorf("%s: registry %v, %v; want a plain URL", in, r != nil && r.registry, err)
		}
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

// TestAgentPathControlCharacters: a file:// agent URL is percent-decoded
// into a path that every format writes into a script; a control or
// line-end character there (%0A, %00, %0D, %C2%85, %E2%80%A8) is refused
// by every format with the flag's name, not only by Ignition.
func TestAgentPathControlCharacters(t *testing.T) {
	data, cfg := loadExample(t, "worker")
	for _, f := range Formats {
		for _, enc := range []string{"%0A", "%00", "%0D", "%09", "%7F", "%C2%85", "%E2%80%A8", "%E2%80%A9", "%EF%BB%BF", "%FF"} {
			u := "file:///opt/bin/machine" + enc + "adm"
			if f.windows() {
				u = "file:///C:/machineadm/machine" + enc + "adm.exe"
			}
			_, err := Render(data, cfg, Options{Format: f, Agent: AgentSource{URL: u}})
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Flag != "--agent-url" {
				t.Errorf("%s with %s: got %v, want an --agent-url OptionError", f, u, err)
			}
		}
	}
	for _, f := range []Format{FormatPowerShell, FormatUnattend} {
		for _, enc := range []string{"%22", "%3C", "%3E", "%7C", "%2A", "%3F"} {
			u := "file:///C:/machineadm/m" + enc + ".exe"
			var oe *OptionError
			if _, err := Render(data, cfg, Options{Format: f, Agent: AgentSource{URL: u}}); !errors.As(err, &oe) {
				t.Errorf("%s with %s: got %v, want an OptionError", f, u, err)
			}
		}
		// Typographic quotes are legal in a Windows path; both quoting
		// layers double them (TestResumeQuotesEveryPowerShellQuote).
		u := "file:///C:/machineadm/it%E2%80%99s.exe"
		if _, err := Render(data, cfg, Options{Format: f, Agent: AgentSource{URL: u}}); err != nil {
			t.Errorf("%s with %s: %v", f, u, err)
		}
	}
}
