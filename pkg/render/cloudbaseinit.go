package render

import (
	"bytes"

	yaml "go.yaml.in/yaml/v3"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/render/quote"
)

// CloudbaseInitStubPath is where the cloudbase-init cloud-config writes the
// PowerShell stub, beside WindowsSpecPath: the stub's icacls on that
// directory leaves both readable by SYSTEM and Administrators only.
const CloudbaseInitStubPath = `C:\ProgramData\machineadm\firstboot.ps1`

// CloudbaseInitKeys are the top-level cloud-config keys cloudbase-init
// implements on Windows (its cloudconfigplugins factory: write_files,
// set_timezone, timezone, set_hostname, hostname, ntp, runcmd, users,
// groups); a key outside this list is logged as unsupported and skipped.
// The cloudbase-init format uses write_files and runcmd only.
var CloudbaseInitKeys = []string{"write_files", "set_timezone", "timezone", "set_hostname", "hostname", "ntp", "runcmd", "users", "groups"}

// CloudbaseInitFileKeys are the write_files entry keys cloudbase-init reads:
// path and content (required), encoding (b64, base64, gz, gzip, gz+b64,
// gz+base64, gzip+b64, gzip+base64), permissions (octal; on Windows only
// the read-only attribute follows it), append. It ignores owner.
var CloudbaseInitFileKeys = []string{"path", "content", "encoding", "permissions", "append"}

// cbiConfig is the cloud-config cloudbase-init reads: write_files, then
// runcmd. cloudbase-init runs its cloud-config plugins in the document's
// key order unless its cloud_config_plugins option orders them, so the
// files are written before the command runs.
type cbiConfig struct {
	WriteFiles []cbiFile          `yaml:"write_files"`
	RunCmd     []quote.YAMLString `yaml:"runcmd"`
}

// cbiFile is one write_files entry. No permissions: on Windows the file's
// ACL, not a mode, keeps it private, and the stub sets that ACL.
type cbiFile struct {
	Path     quote.YAMLString `yaml:"path"`
	Encoding quote.YAMLString `yaml:"encoding,omitempty"`
	Content  quote.YAMLString `yaml:"content"`
}

// cbiRunCmd runs the stub. cloudbase-init joins runcmd entries into one
// cmd.exe script, so the entry is a single cmd.exe line with no user
// content; its exit code is the stub's.
const cbiRunCmd = `powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "` + CloudbaseInitStubPath + `"`

// renderCloudbaseInit builds a cloud-config for cloudbase-init on Windows:
// write_files writes the spec to WindowsSpecPath (unless it comes from a
// payload URL) and the PowerShell stub of the powershell format to
// CloudbaseInitStubPath, both gz+b64; runcmd runs the stub with powershell.exe. The stub, not the spec inline,
// restricts the directory to SYSTEM and Administrators before bootstrap
// reads the spec.
func renderCloudbaseInit(r *resolved, spec []byte) ([]byte, error) {
	script, err := execute("stub.ps1.tmpl", newStub(r, spec, WindowsAgentPath, WindowsSpecPath, false))
	if err != nil {
		return nil, err
	}
	var cc cbiConfig
	if r.Payload == nil {
		cc.WriteFiles = append(cc.WriteFiles, cbiEntry(WindowsSpecPath, spec))
	}
	cc.WriteFiles = append(cc.WriteFiles, cbiEntry(CloudbaseInitStubPath, script))
	cc.RunCmd = []quote.YAMLString{cbiRunCmd}

	var b bytes.Buffer
	b.WriteString(cloudConfigHeader)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(&cc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// cbiEntry is the gz+b64 write_files entry of data at path: no byte of the
// spec or the stub appears unencoded.
func cbiEntry(path string, data []byte) cbiFile {
	return cbiFile{Path: quote.YAMLString(path), Encoding: "gz+b64", Content: quote.YAMLString(gzipBase64(data))}
}

// CheckSpecOS refuses, with an *OptionError for --format, a spec whose
// spec.os (already defaulted by the loader: the building binary's OS when
// the document has none) is not the cloudbase-init format's Windows: a
// Linux spec's paths and rules mean nothing to a Windows agent. The
// other formats render a spec of any OS, as they did before spec.os
// existed. `machineadm render` calls it before Render.
func CheckSpecOS(f Format, cfg *machineadm.MachineBootstrapConfig) error {
	if f != FormatCloudbaseInit || cfg == nil {
		return nil
	}
	if cfg.Spec.OS != machineadm.OSWindows {
		return optErr("--format", "%s is bootstrap data for Windows, but the spec is for %q (spec.os): write os: windows in the spec, or pick a Linux format", f, cfg.Spec.OS)
	}
	return nil
}
