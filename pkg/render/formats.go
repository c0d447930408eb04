package render

import (
	"slices"
	"strings"
)

// Format names an OS bootstrapper's input format.
type Format string

// The formats. A new format is a constant here, a row of formats below and
// its renderer in a file of its own; the CLI help, Render's dispatch and
// docs/render.md's table come from the row.
const (
	// FormatCloudConfig is a cloud-init "#cloud-config" document using only
	// the write_files and runcmd modules.
	FormatCloudConfig Format = "cloud-config"
	// FormatIgnition is an Ignition config (spec 3.x JSON) with a systemd
	// unit, for Fedora CoreOS, Flatcar and other Ignition systems.
	FormatIgnition Format = "ignition"
	// FormatShell is a POSIX sh script, for bare metal and any bootstrapper
	// that runs a script.
	FormatShell Format = "shell"
	// FormatPowerShell is a first-boot PowerShell script for Windows
	// (cloudbase-init "#ps1_sysnative" user data, or run by hand).
	FormatPowerShell Format = "powershell"
	// FormatCloudbaseInit is a "#cloud-config" document for cloudbase-init
	// on Windows, using only the write_files and runcmd plugins, that
	// writes the spec and the PowerShell stub and runs the stub.
	FormatCloudbaseInit Format = "cloudbase-init"
	// FormatUnattend is a Windows answer file (unattend.xml) whose specialize
	// pass writes and runs the PowerShell stub.
	FormatUnattend Format = "unattend"
)

// OS is the operating system a format's bootstrap data runs on.
type OS string

const (
	// Linux: the stub is POSIX sh (or Ignition's own fetch) and checks
	// digests with sha256sum.
	Linux OS = "linux"
	// Windows: the stub is PowerShell and checks digests with Get-FileHash.
	Windows OS = "windows"
)

// FormatInfo is one format's row of the registry.
type FormatInfo struct {
	// Format is the name --format takes.
	Format Format
	// OS is the operating system the bootstrap data runs on.
	OS OS
	// Help is the one-line description `machineadm render --help` shows.
	Help string
	// For names the bootstrappers and systems that take the format, in
	// Markdown: the "for" column of docs/render.md's format table.
	For string
	// Doc says what the output is, in Markdown: the "what it is" column of
	// docs/render.md's format table (one line, no "|").
	Doc string
	// ClusterAPI is true when the Cluster API provider offers the format
	// (MachineadmConfig spec.format); its enum is checked against these.
	ClusterAPI bool
	// render builds the bootstrap data from the resolved options and the
	// spec document.
	render func(r *resolved, spec []byte) ([]byte, error)
}

// formats is every format, once, in documentation order.
var formats = []FormatInfo{
	{
		Format:     FormatCloudConfig,
		OS:         Linux,
		Help:       "cloud-init write_files + runcmd, contents gz+b64 (plain with --gzip)",
		For:        "cloud-init (Ubuntu, Debian, RHEL, …)",
		Doc:        "`#cloud-config` with only the `write_files` and `runcmd` modules. `write_files` writes the spec (`/etc/machineadm/spec.yaml`, 0600) and the stub (`/var/lib/machineadm/stub.sh`, 0700), both `encoding: gz+b64`; `runcmd` runs `[/bin/sh, /var/lib/machineadm/stub.sh]`. Never a `## template: jinja` header, and no byte of user content appears unencoded, so nothing in the spec can break the YAML or be read as a template. With `--gzip` the whole document is gzip-compressed (cloud-init decompresses gzip user data before reading it) and the two files inside are plain YAML text where YAML carries them byte for byte (UTF-8 ending in a newline, no CR, no control characters, no trailing white space; anything else stays gz+b64).",
		ClusterAPI: true,
		render:     renderCloudConfig,
	},
	{
		Format: FormatIgnition,
		OS:     Linux,
		Help:   "Ignition 3.x JSON (--ignition-version, default " + DefaultIgnitionVersion + ") with machineadm.service",
		For:    "Fedora CoreOS, Flatcar, other Ignition systems",
		Doc: "Ignition config, spec " + IgnitionVersions()[0] + "–" + IgnitionVersions()[len(IgnitionVersions())-1] +
			" (`--ignition-version`, default " + DefaultIgnitionVersion + "), built with the config types of `github.com/coreos/ignition/v2`. See below.",
		ClusterAPI: true,
		render:     renderIgnition,
	},
	{
		Format: FormatShell,
		OS:     Linux,
		Help:   "POSIX sh script (bare metal, any bootstrapper)",
		For:    "bare metal, PXE, any bootstrapper that runs a script",
		Doc:    "a POSIX `sh` script carrying the spec inline",
		render: renderShell,
	},
	{
		Format: FormatPowerShell,
		OS:     Windows,
		Help:   "first-boot PowerShell (cloudbase-init #ps1_sysnative)",
		For:    "Windows with cloudbase-init (`#ps1_sysnative` user data), or run by hand",
		Doc:    "a first-boot PowerShell script; see Windows below",
		// Cluster API: MachineadmConfig spec.os windows.
		ClusterAPI: true,
		render:     renderPowerShell,
	},
	{
		Format: FormatCloudbaseInit,
		OS:     Windows,
		Help:   "cloudbase-init cloud-config: write_files + runcmd running the PowerShell stub",
		For:    "Windows with cloudbase-init (`#cloud-config` user data)",
		Doc:    "`#cloud-config` with only the `write_files` and `runcmd` plugins cloudbase-init implements. `write_files` writes the spec (`C:\\ProgramData\\machineadm\\spec.yaml`, unless `--payload-url` serves it) and the PowerShell stub (`C:\\ProgramData\\machineadm\\firstboot.ps1`), both `encoding: gz+b64`; `runcmd` runs the stub with `powershell.exe -ExecutionPolicy Bypass -File`, and the stub restricts the directory to SYSTEM and Administrators before bootstrap reads the spec; see Windows below",
		// Cluster API: MachineadmConfig spec.os windows.
		ClusterAPI: true,
		render:     renderCloudbaseInit,
	},
	{
		Format: FormatUnattend,
		OS:     Windows,
		Help:   "Windows unattend.xml whose specialize pass runs the PowerShell stub",
		For:    "Windows answer files",
		Doc:    "an `unattend.xml` whose specialize pass writes and runs the PowerShell stub",
		// Cluster API: MachineadmConfig spec.os windows.
		ClusterAPI: true,
		render:     renderUnattend,
	},
}

// Formats lists every supported format in documentation order.
var Formats = func() []Format {
	fs := make([]Format, len(formats))
	for i, f := range formats {
		fs[i] = f.Format
	}
	return fs
}()

// FormatNames returns the names of every format, comma-separated, in
// documentation order: "cloud-config, ignition, …", for help and error
// messages.
func FormatNames() string {
	s := make([]string, len(Formats))
	for i, f := range Formats {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// FormatInfos returns every format's row, in documentation order.
func FormatInfos() []FormatInfo { return slices.Clone(formats) }

// LookupFormat returns f's row; ok is false for an unknown format.
func LookupFormat(f Format) (info FormatInfo, ok bool) {
	i := slices.IndexFunc(formats, func(x FormatInfo) bool { return x.Format == f })
	if i < 0 {
		return FormatInfo{}, false
	}
	return formats[i], true
}

// windows reports whether f runs on Windows.
func (f Format) windows() bool {
	info, _ := LookupFormat(f)
	return info.OS == Windows
}
