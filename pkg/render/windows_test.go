package render

import (
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/render/quote"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No PowerShell or Windows Setup runs here: these tests check the XML with
// encoding/xml and the script's structure as text, and decode what the
// unattend.xml writes the way certutil would.

// unattendDoc is the part of an answer file the tests read.
type unattendDoc struct {
	XMLName  xml.Name `xml:"urn:schemas-microsoft-com:unattend unattend"`
	Settings []struct {
		Pass       string `xml:"pass,attr"`
		Components []struct {
			Name     string `xml:"name,attr"`
			Commands []struct {
				Action      string `xml:"http://schemas.microsoft.com/WMIConfig/2002/State action,attr"`
				Order       int    `xml:"Order"`
				Description string `xml:"Description"`
				Path        string `xml:"Path"`
				WillReboot  string `xml:"WillReboot"`
			} `xml:"RunSynchronous>RunSynchronousCommand"`
		} `xml:"component"`
	} `xml:"settings"`
}

// parseUnattend decodes an answer file strictly (well-formed XML, the
// expected element names) and returns its specialize commands' paths in
// order.
func parseUnattend(t *testing.T, out []byte) []string {
	t.Helper()
	var doc unattendDoc
	d := xml.NewDecoder(strings.NewReader(string(out)))
	d.Strict = true
	if err := d.Decode(&doc); err != nil {
		t.Fatalf("unattend.xml is not well-formed: %v", err)
	}
	if len(doc.Settings) != 1 || doc.Settings[0].Pass != "specialize" || len(doc.Settings[0].Components) != 1 ||
		doc.Settings[0].Components[0].Name != "Microsoft-Windows-Deployment" {
		t.Fatalf("unexpected structure: %+v", doc)
	}
	var paths []string
	for i, c := range doc.Settings[0].Components[0].Commands {
		if c.Order != i+1 || c.Action != "add" || c.WillReboot != "Never" || c.Description == "" {
			t.Errorf("command %d: order %d action %q reboot %q", i+1, c.Order, c.Action, c.WillReboot)
		}
		if len(c.Path) > unattendMaxPath {
			t.Errorf("command %d is %d characters, over %d", i+1, len(c.Path), unattendMaxPath)
		}
		paths = append(paths, c.Path)
	}
	return paths
}

func TestUnattend(t *testing.T) {
	for _, name := range []string{"worker", "control-plane-init"} {
		t.Run(name, func(t *testing.T) {
			data, cfg := loadExample(t, name)
			o := Options{Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}}
			o.Format = FormatPowerShell
			script := mustRender(t, data, cfg, o)
			o.Format = FormatUnattend
			paths := parseUnattend(t, mustRender(t, data, cfg, o))

			n := len(paths)
			if n < 5 || !strings.Contains(paths[0], "icacls") || !strings.Contains(paths[n-3], "certutil -f -decode "+unattendB64+" "+unattendGzip) ||
				!strings.Contains(paths[n-2], "GZipStream") ||
				!strings.Contains(paths[n-1], "powershell -NoProfile -ExecutionPolicy Bypass -File "+unattendScript) {
				t.Fatalf("command order: first must lock the directory, then write, decode, decompress, run:\n%s", strings.Join(paths, "\n"))
			}
			// Reassemble the chunks as cmd's echo appends them; certutil
			// decodes base64 ignoring line breaks, GZipStream decompresses.
			prefix := `cmd /c >>` + unattendB64 + ` echo `
			var b64 strings.Builder
			for _, p := range paths[1 : n-3] {
				chunk, ok := strings.CutPrefix(p, prefix)
				if !ok || strings.ContainsAny(chunk, "&|<>^%\" ") {
					t.Fatalf("chunk command %q is not a plain echo of base64", p)
				}
				b64.WriteString(chunk + "\r\n")
			}
			got, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(b64.String()), ""))
			if err != nil {
				t.Fatal(err)
			}
			if got = gunzip(t, got); string(got) != string(script) {
				t.Error("the script the unattend.xml writes differs from the PowerShell stub")
			}
		})
	}
}

// psOrder asserts that the patterns occur in the script in this order.
func psOrder(t *testing.T, script string, patterns ...string) {
	t.Helper()
	at := 0
	for _, p := range patterns {
		i := strings.Index(script[at:], p)
		if i < 0 {
			t.Fatalf("%q missing, or not after %q", p, script[:at])
		}
		at += i + len(p)
	}
}

func TestPowerShellStructure(t *testing.T) {
	data, cfg := loadExample(t, "worker")
	script := string(mustRender(t, data, cfg, Options{Format: FormatPowerShell, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}}))

	// The digest is computed with Get-FileHash and compared before the
	// download is moved into place, and that happens before the agent runs.
	psOrder(t, script,
		"function Get-Sha256", "Get-FileHash -Algorithm SHA256",
		// Temporary files are this process's own: a second stub
		// started at once never writes into them.
		"$download = \"$AgentPath.download.$PID\"",
		"Get-Download $AgentUrl $download",
		"Assert-Sha256 $download $AgentSha256 'agent' -Remove",
		"Move-Item -Force -LiteralPath $download -Destination $AgentPath",
		"icacls.exe $specDir /inheritance:r",
		"$specTmp = \"$SpecPath.tmp.$PID\"",
		"[IO.File]::Create($specTmp)",
		// bootstrap runs from resume.ps1, which the startup task runs
		// again after the reboot a domain join needs.
		"& $Agent bootstrap -f $Spec",
		"if ($class -ne 'RebootRequired') { exit $code }",
		"Restart-Computer -Force",
		"Register-ScheduledTask -Force -TaskName 'machineadm-bootstrap'",
		"if ($inSetup) { & $resume -NoReboot } else { & $resume }",
		"exit $LASTEXITCODE")
	for _, want := range []string{
		"$ErrorActionPreference = 'Stop'",
		"if ($i -ge $Attempts) { throw",
		"if (($Deadline - (Get-Date)).TotalSeconds -le $wait) { throw",
		"[Math]::Max(1,",
		"Start-Sleep -Seconds $wait",
		"$shown = $Url -replace '\\?.*$', ''",
		// Each attempt is announced, and a failed one says why, without
		// the URL's query string.
		`Write-Log "${shown}: download attempt $i of $Attempts"`,
		`$why = $_.Exception.Message -replace '\?\S*', ''`,
		`Write-Log "${shown}: attempt $i of $Attempts failed: $why; retrying in $wait s"`,
		`throw "${shown}: download failed $Attempts times: $why"`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	if !strings.HasPrefix(script, "#ps1_sysnative\n") {
		t.Error("first line is not #ps1_sysnative")
	}
	// Every parameter default is one single-quoted literal.
	params := regexp.MustCompile(`(?m)^\t\[string\]\$(\w+) = ('(?:[^']|'')*')`).FindAllStringSubmatch(script, -1)
	if len(params) != 8 {
		t.Errorf("found %d quoted parameters, want 8: %v", len(params), params)
	}
}

func TestPSQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "''",
		"it's":                   "'it''s'",
		"a\u2019b":               "'a\u2019\u2019b'",
		"$(x) `y` \"z\"":         "'$(x) `y` \"z\"'",
		`C:\Program Files\x.exe`: `'C:\Program Files\x.exe'`,
	} {
		if got := quote.PowerShell(in); got != want {
			t.Errorf("quote.PowerShell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestContribWindows keeps contrib/windows/firstboot.ps1 equal to
// the stub rendered with no baked-in values (the agent in the image, the
// spec at its path or passed by parameter) and checks the unattend.xml
// template.
func TestContribWindows(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "contrib", "windows")
	script, err := execute("stub.ps1.tmpl", &stub{AgentPath: WindowsAgentPath, SpecPath: WindowsSpecPath})
	if err != nil {
		t.Fatal(err)
	}
	compareOrUpdate(t, filepath.Join(dir, "firstboot.ps1"), script)

	tmpl, err := os.ReadFile(filepath.Join(dir, "unattend.xml"))
	if err != nil {
		t.Fatal(err)
	}
	// With a typical URL in place of each placeholder every command fits
	// Windows Setup's limit.
	filled := strings.NewReplacer("@PAYLOAD_URL@", "https://specs.example.com/machines/"+strings.Repeat("w", 24)+".yaml",
		"@PAYLOAD_SHA256@", testAgentSHA256).Replace(string(tmpl))
	paths := parseUnattend(t, []byte(filled))
	if len(paths) != 1 {
		t.Fatalf("template commands: %q", paths)
	}
	for _, p := range regexp.MustCompile(` -(\w+) `).FindAllStringSubmatch(paths[0], -1) {
		if p[1] != "NoProfile" && p[1] != "ExecutionPolicy" && p[1] != "File" && !strings.Contains(string(script), "[string]$"+p[1]+" =") {
			t.Errorf("the template passes -%s, which the script does not take", p[1])
		}
	}
}

// TestResumeQuotesEveryPowerShellQuote: resume.ps1, which a startup task
// runs as SYSTEM at every boot, gets its paths from the stub's parameters
// quoted at run time by the stub's $q. Its -replace class must name every
// character PowerShell ends a verbatim string at (quote.PowerShellQuotes),
// not only the apostrophe: a path with U+2019 would otherwise end the
// string and run the rest as code.
func TestResumeQuotesEveryPowerShellQuote(t *testing.T) {
	data, cfg := loadExample(t, "worker")
	out := string(mustRender(t, data, cfg, Options{Format: FormatPowerShell, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}}))
	m := regexp.MustCompile(`(?m)^\$q = \{ param\(\$v\) "'" \+ \(\$v -replace ('(?:[^']|'')*'), '\$0\$0'\) \+ "'" \}$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run-time quoting of the form $q = { param($v) \"'\" + ($v -replace 'CLASS', '$0$0') + \"'\" } in the stub")
	}
	class := psWord(t, m[1])
	for _, r := range quote.PowerShellQuotes {
		if !strings.ContainsRune(class, r) && !strings.Contains(class, fmt.Sprintf(`\u%04x`, r)) {
			t.Errorf("the stub's run-time quoting class %s misses %U", class, r)
		}
	}
}

// TestPowerShellReadsTheSpecsReportPath: the stub looks for the domain
// join's RebootRequired in the report where the agent writes it, the
// spec's spec.report.path (quoted as every parameter), and at the
// Windows default only when the spec names none. It read the default
// always, so with a report path of the spec's own it never saw
// RebootRequired and the machine did not reboot to finish the join.
func TestPowerShellReadsTheSpecsReportPath(t *testing.T) {
	// cloudbase-init's format writes this same stub (newStub), compressed.
	for _, format := range []Format{FormatPowerShell} {
		data, cfg := loadExample(t, "worker")
		opts := Options{Format: format, Agent: AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}}
		cfg.Spec.OS, cfg.Spec.Report.Path = machineadm.OSWindows, ""
		if script := string(mustRender(t, data, cfg, opts)); !strings.Contains(script, "[string]$ReportPath = "+quote.PowerShell(WindowsReportPath)) {
			t.Errorf("%s: no spec.report.path: the stub does not read %s", format, WindowsReportPath)
		}
		cfg.Spec.OS, cfg.Spec.Report.Path = machineadm.OSWindows, `D:/reports/it's.json`
		script := string(mustRender(t, data, cfg, opts))
		if !strings.Contains(script, `[string]$ReportPath = 'D:/reports/it''s.json'`) {
			t.Errorf("%s: spec.report.path %q: the stub does not read it", format, cfg.Spec.Report.Path)
		}
	}
}
