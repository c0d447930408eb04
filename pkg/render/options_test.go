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
		"no format":            {Options{Agent: ok}, "--format"},
		"unknown format":       {Options{Format: "butane", Agent: ok}, "--format"},
		"no agent url":         {Options{Format: FormatShell}, "--agent-url"},
		"ftp agent":            {Options{Format: FormatShell, Agent: AgentSource{URL: "ftp://x/machineadm", SHA256: testAgentSHA256}}, "--agent-url"},
		"no host":              {Options{Format: FormatShell, Agent: AgentSource{URL: "https:///machineadm", SHA256: testAgentSHA256}}, "--agent-url"},
		"space in url":         {Options{Format: FormatShell, Agent: AgentSource{URL: "https://x/a b", SHA256: testAgentSHA256}}, "--agent-url"},
		"newline in url":       {Options{Format: FormatShell, Agent: AgentSource{URL: "https://x/a\nrm -rf /", SHA256: testAgentSHA256}}, "--agent-url"},
		"non-utf8 url":         {Options{Format: FormatIgnition, Agent: AgentSource{URL: "http://0\x8b", SHA256: testAgentSHA256}}, "--agent-url"},
		"non-ascii url":        {Options{Format: FormatPowerShell, Agent: AgentSource{URL: "https://example.com/\u2019agent", SHA256: testAgentSHA256}}, "--agent-url"},
		"non-ascii payload":    {Options{Format: FormatShell, Agent: ok, Payload: &PayloadSource{URL: "https://specs.example/é.yaml", SHA256: testAgentSHA256}}, "--payload-url"},
		"relative file url":    {Options{Format: FormatShell, Agent: AgentSource{URL: "file:machineadm"}}, "--agent-url"},
		"file url with host":   {Options{Format: FormatShell, Agent: AgentSource{URL: "file://server/machineadm"}}, "--agent-url"},
		"file url of a dir":    {Options{Format: FormatPowerShell, Agent: AgentSource{URL: "fiLe:/"}}, "--agent-url"},
		"file url trailing /":  {Options{Format: FormatShell, Agent: AgentSource{URL: "file:///opt/bin/"}}, "--agent-url"},
		"file url dot-dot":     {Options{Format: FormatShell, Agent: AgentSource{URL: "file:///opt/../etc/machineadm"}}, "--agent-url"},
		"file url double /":    {Options{Format: FormatShell, Agent: AgentSource{URL: "file:///opt//machineadm"}}, "--agent-url"},
		"http without digest":  {Options{Format: FormatShell, Agent: AgentSource{URL: testAgentURL}}, "--agent-sha256"},
		"short digest":         {Options{Format: FormatShell, Agent: AgentSource{URL: testAgentURL, SHA256: "abc"}}, "--agent-sha256"},
		"payload no digest":    {Options{Format: FormatShell, Agent: ok, Payload: &PayloadSource{URL: testPayloadURL}}, "--payload-sha256"},
		"payload file url":     {Options{Format: FormatShell, Agent: ok, Payload: &PayloadSource{URL: "file:///spec.yaml", SHA256: testAgentSHA256}}, "--payload-url"},
		"ignition odd path":    {Options{Format: FormatIgnition, Agent: AgentSource{URL: "file:///opt/my%20bin/machineadm"}}, "--agent-url"},
		"ignition version 2.3": {Options{Format: FormatIgnition, IgnitionVersion: "2.3.0", Agent: ok}, "--ignition-version"},
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
