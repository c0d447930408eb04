package render

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"strings"
)

// Locations the unattend.xml writes to, expanded by cmd.exe.
const (
	unattendDir    = `%ProgramData%\machineadm`
	unattendB64    = unattendDir + `\firstboot.b64`
	unattendGzip   = unattendDir + `\firstboot.gz`
	unattendScript = unattendDir + `\firstboot.ps1`
	// unattendMaxPath is the longest RunSynchronousCommand/Path Windows
	// Setup accepts (Microsoft-Windows-Deployment documentation).
	unattendMaxPath = 259
)

// unattendCommand is one RunSynchronousCommand.
type unattendCommand struct {
	Order       int
	Description string
	Path        string
}

// renderUnattend builds a Windows answer file whose specialize pass (run as
// SYSTEM, Microsoft-Windows-Deployment RunSynchronous) creates
// C:\ProgramData\machineadm readable only by SYSTEM and Administrators,
// writes the gzip-compressed PowerShell stub there in base64 chunks small
// enough for Setup's 259-character command limit, decodes them with
// certutil, decompresses the script with .NET's GZipStream and runs it.
// Nothing in a command is user content except base64 text.
func renderUnattend(r *resolved, spec []byte) ([]byte, error) {
	script, err := renderPowerShell(r, spec)
	if err != nil {
		return nil, err
	}
	cmds := []unattendCommand{{
		Description: "machineadm: create a directory only SYSTEM and Administrators can read",
		Path: fmt.Sprintf(`cmd /c mkdir %[1]s & icacls %[1]s /inheritance:r /grant:r *S-1-5-18:(OI)(CI)F *S-1-5-32-544:(OI)(CI)F & del /q %[2]s`,
			unattendDir, unattendB64),
	}}
	// Redirection first: a chunk ending in a digit must not read as "2>>".
	prefix := `cmd /c >>` + unattendB64 + ` echo `
	b64 := base64.StdEncoding.EncodeToString(gzipData(script))
	chunk := (unattendMaxPath - len(prefix)) / 4 * 4
	for i := 0; i < len(b64); i += chunk {
		part := b64[i:min(i+chunk, len(b64))]
		cmds = append(cmds, unattendCommand{Description: "machineadm: write the first-boot script", Path: prefix + part})
	}
	cmds = append(cmds,
		unattendCommand{
			Description: "machineadm: decode the first-boot script",
			Path:        fmt.Sprintf(`cmd /c certutil -f -decode %s %s >nul && del /q %s`, unattendB64, unattendGzip, unattendB64),
		},
		unattendCommand{
			Description: "machineadm: decompress the first-boot script",
			Path: `powershell -NoProfile -Command "$d=$env:ProgramData+'\machineadm\firstboot.';` +
				`$z=New-Object IO.Compression.GZipStream([IO.File]::OpenRead($d+'gz'),0);` + // 0: CompressionMode.Decompress
				`$o=[IO.File]::Create($d+'ps1');$z.CopyTo($o);$o.Close();$z.Close();del ($d+'gz')"`,
		},
		unattendCommand{
			Description: "machineadm: verify the agent and bootstrap this machine",
			Path:        `cmd /c powershell -NoProfile -ExecutionPolicy Bypass -File ` + unattendScript,
		})
	for i := range cmds {
		cmds[i].Order = i + 1
		if len(cmds[i].Path) > unattendMaxPath {
			return nil, fmt.Errorf("unattend command %d is %d characters, over Windows Setup's %d", i+1, len(cmds[i].Path), unattendMaxPath)
		}
	}
	return execute("unattend.xml.tmpl", cmds)
}

// xmlEscape escapes s for XML character data and attribute values.
func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s)) // writes to a bytes.Buffer do not fail
	return strings.TrimSpace(b.String())
}
