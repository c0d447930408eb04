// Package cpunits runs etcd and the Kubernetes control-plane components as
// systemd units (spec.controlPlane.runtime: Systemd). It knows nothing of
// kubeadm: pkg/kubeadm derives each Component from the pod spec kubeadm's
// own manifest code builds, and this package renders the hardened unit
// file, prepares the host (system users, file owners and modes) and
// installs and starts the units.
//
// The pure part (Render, SysusersConfig, PathRule) never touches the
// host; Install, CreateUsers and ApplyPaths do, through a root prefix.
package cpunits

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/machineadm/machineadm/pkg/host/files"
)

// Directories and file modes of the rendered files.
const (
	// UnitDir is where unit files are written (the administrator's unit
	// directory, systemd.unit(5)).
	UnitDir = "/etc/systemd/system"
	// EnvDir holds one EnvironmentFile per unit that has environment
	// variables (proxy settings may carry credentials, so they are kept
	// out of the unit, which `systemctl show` reveals to every user).
	EnvDir = "/etc/machineadm/units"
	// UnitMode is the mode of unit files: 0600, as CIS 1.1.1-1.1.8 ask
	// for the static pod manifests the units replace.
	UnitMode fs.FileMode = 0o600
	// EnvMode is the mode of environment files.
	EnvMode fs.FileMode = 0o600
	// WantedBy is the target the units are enabled for.
	WantedBy = "multi-user.target"
)

// Restart policy of every unit: restart after RestartSec whatever the
// exit; more than StartLimitBurst starts within StartLimitInterval put the
// unit into the failed state, where monitoring sees it (and `systemctl
// reset-failed` or the next machineadm run starts it again).
const (
	RestartSec         = 5 * time.Second
	StartLimitInterval = 10 * time.Minute
	StartLimitBurst    = 30
	// TimeoutStopSec bounds a stop (SIGTERM) before SIGKILL: 30 s, the
	// grace period the kubelet gives the static pod the unit replaces (a
	// Pod's terminationGracePeriodSeconds, whose default is 30 s; kubeadm
	// sets none for its control-plane pods). It was 60 s: a kube-apiserver
	// whose etcd had lost quorum spent all of it in its shutdown (its
	// requests to etcd wait for their timeout), which held the machine's
	// power-off and reboot for a minute.
	TimeoutStopSec = 30 * time.Second
)

// EnvVar is one environment variable of a component.
type EnvVar struct {
	// Name is the variable name ([A-Za-z_][A-Za-z0-9_]*).
	Name string
	// Value is its value (a single line).
	Value string
}

// Component is one control-plane process as a systemd unit.
type Component struct {
	// Name is the unit's base name, for example "kube-apiserver"; the unit
	// is Name+".service". Required: [a-z0-9-]+.
	Name string
	// Description is the unit's Description=.
	Description string
	// Documentation is a URL for Documentation=; optional.
	Documentation string
	// Command is the full command line: Command[0] is the absolute path of
	// the binary, the rest the arguments, exactly as the process gets
	// them. Required.
	Command []string
	// Env are the environment variables, in order.
	Env []EnvVar
	// User and Group run the process (system accounts created by
	// CreateUsers). Required.
	User, Group string
	// SupplementaryGroups are extra groups of the process.
	SupplementaryGroups []string
	// ReadWritePaths are the only host paths the process may write
	// (everything else is read-only: ProtectSystem=strict); each must
	// exist when the unit starts.
	ReadWritePaths []string
	// InaccessiblePaths are host paths hidden from the process; a missing
	// one is ignored.
	InaccessiblePaths []string
	// Capabilities is the capability bounding set, for example
	// ["CAP_NET_BIND_SERVICE"]; empty means none at all.
	Capabilities []string
	// After are units this one is ordered after and wants, for example
	// "etcd.service".
	After []string
	// NoNetlink leaves AF_NETLINK out of the allowed address families (for
	// components that never list interfaces).
	NoNetlink bool
	// Credentials are the files systemd hands the process instead of the
	// process opening them itself (LoadCredential=), so that they stay
	// root:root 0600 while the process runs as User.
	Credentials []Credential
	// CredentialStamp, when set, is written into the unit as a comment
	// (StampCredentials computes it from the credentials' files), so that
	// a rewritten credential file changes the unit and the unit is
	// restarted to read the new copy.
	CredentialStamp string
}

// Credential is a file systemd reads as root when the unit starts and
// hands the process as a private read-only copy in its credentials
// directory (LoadCredential=ID:PATH; systemd.exec(5), "Credentials";
// systemd 247 or later, the directory named by %d and
// $CREDENTIALS_DIRECTORY). The copy is taken at each start: a new content
// reaches the process when the unit restarts.
type Credential struct {
	// ID is the credential's name and, unless Flag is set, the flag it
	// serves: the argument "--FLAG=Path" of Command is rendered
	// "--FLAG=%d/ID". Required: [a-z0-9][a-z0-9-]*, unique in the
	// component.
	ID string
	// Flag is the flag served, without "--", when it differs from ID (a
	// flag given more than once: --service-account-key-file for each key
	// of a rotation). Optional: [a-z0-9][a-z0-9-]*.
	Flag string
	// Path is the absolute, clean machine path of the file (no white
	// space). Required; the unit fails to start when it is missing.
	Path string
}

// Unit returns the unit name, Name+".service".
func (c *Component) Unit() string { return c.Name + ".service" }

// UnitPath returns the unit file path.
func (c *Component) UnitPath() string { return path.Join(UnitDir, c.Unit()) }

// InstalledUnit returns the content of the unit file name
// ("kube-apiserver.service") installed in UnitDir under root (a host
// path prefix, "/" for the live system), read as host files are
// (files.Resolve, files.ReadState: a symlink swapped in is not followed);
// nil and no error when none is installed.
func InstalledUnit(root, name string) ([]byte, error) {
	hp, err := files.Resolve(root, path.Join(UnitDir, name))
	if err != nil {
		return nil, err
	}
	st, err := files.ReadState(hp)
	if err != nil || !st.Exists {
		return nil, err
	}
	return st.Content, nil
}

// EnvPath returns the environment file path (used only when Env is set).
func (c *Component) EnvPath() string { return path.Join(EnvDir, c.Name+".env") }

// File is one rendered file.
type File struct {
	// Path is the absolute machine path.
	Path string
	// Content is the full content.
	Content []byte
	// Mode is the permission bits (owner root:root).
	Mode fs.FileMode
	// Secret marks content that must not be shown in diffs (environment
	// files).
	Secret bool
}

var (
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`) })
	envRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	// accountRE is what systemd accepts in User=, Group= (a portable
	// user name, systemd.exec(5)).
	accountRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_-]*$`) })
	capRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^CAP_[A-Z_]+$`) })
)

// Render returns the files of c: the unit file and, when c has
// environment variables, its environment file. Errors name the bad field.
func Render(c Component) ([]File, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("# Generated by machineadm from the static pod spec kubeadm builds for %s", c.Name)
	w("# (spec.controlPlane.runtime: Systemd). Do not edit: machineadm rewrites it.")
	w("[Unit]")
	w("Description=%s", c.Description)
	if c.Documentation != "" {
		w("Documentation=%s", c.Documentation)
	}
	after := append([]string{"network-online.target"}, c.After...)
	w("After=%s", strings.Join(after, " "))
	w("Wants=%s", strings.Join(after, " "))
	w("StartLimitIntervalSec=%d", int(StartLimitInterval.Seconds()))
	w("StartLimitBurst=%d", StartLimitBurst)
	w("")
	w("[Service]")
	w("Type=simple")
	b.WriteString("ExecStart=" + execLine(c.Command, c.Credentials) + "\n")
	if len(c.Env) > 0 {
		w("EnvironmentFile=%s", c.EnvPath())
	}
	if len(c.Credentials) > 0 {
		w("# Files handed to the process as root-owned credentials (%%d in ExecStart=).")
		if c.CredentialStamp != "" {
			w("# Credential files stamp: %s", c.CredentialStamp)
		}
	}
	for _, cr := range c.Credentials {
		w("LoadCredential=%s:%s", cr.ID, strings.ReplaceAll(cr.Path, "%", "%%"))
	}
	w("User=%s", c.User)
	w("Group=%s", c.Group)
	if len(c.SupplementaryGroups) > 0 {
		w("SupplementaryGroups=%s", strings.Join(c.SupplementaryGroups, " "))
	}
	w("Restart=always")
	w("RestartSec=%d", int(RestartSec.Seconds()))
	w("TimeoutStopSec=%d", int(TimeoutStopSec.Seconds()))
	// The limits containerd gives the static pods' containers.
	w("LimitNOFILE=1048576")
	w("")
	w("# Sandboxing (systemd.exec(5)); `systemd-analyze security %s` scores it.", c.Unit())
	w("NoNewPrivileges=yes")
	w("CapabilityBoundingSet=%s", strings.Join(c.Capabilities, " "))
	w("AmbientCapabilities=")
	w("ProtectSystem=strict")
	for _, p := range c.ReadWritePaths {
		w("ReadWritePaths=%s", pathArg(p))
	}
	for _, p := range c.InaccessiblePaths {
		w("InaccessiblePaths=-%s", pathArg(p))
	}
	w("ProtectHome=yes")
	w("PrivateTmp=yes")
	w("PrivateMounts=yes")
	w("PrivateDevices=yes")
	w("DevicePolicy=closed")
	w("ProtectKernelTunables=yes")
	w("ProtectKernelModules=yes")
	w("ProtectKernelLogs=yes")
	w("ProtectControlGroups=yes")
	w("ProtectClock=yes")
	w("ProtectHostname=yes")
	w("ProtectProc=invisible")
	w("ProcSubset=pid")
	w("RestrictNamespaces=yes")
	w("RestrictRealtime=yes")
	w("RestrictSUIDSGID=yes")
	w("LockPersonality=yes")
	w("MemoryDenyWriteExecute=yes")
	w("RemoveIPC=yes")
	w("KeyringMode=private")
	w("UMask=0077")
	families := "AF_UNIX AF_INET AF_INET6 AF_NETLINK"
	if c.NoNetlink {
		families = "AF_UNIX AF_INET AF_INET6"
	}
	w("RestrictAddressFamilies=%s", families)
	w("SystemCallArchitectures=native")
	w("SystemCallFilter=@system-service")
	w("SystemCallFilter=~@privileged @resources")
	w("SystemCallErrorNumber=EPERM")
	w("")
	w("[Install]")
	w("WantedBy=%s", WantedBy)
	files := []File{{Path: c.UnitPath(), Content: []byte(b.String()), Mode: UnitMode}}
	if len(c.Env) > 0 {
		var e strings.Builder
		for _, v := range c.Env {
			e.WriteString(v.Name + "=" + envValue(v.Value) + "\n")
		}
		files = append(files, File{Path: c.EnvPath(), Content: []byte(e.String()), Mode: EnvMode, Secret: true})
	}
	return files, nil
}

func (c *Component) check() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("component %q: "+format, append([]any{c.Name}, a...)...))
	}
	if !nameRE().MatchString(c.Name) {
		bad("name must match %s", nameRE)
	}
	if len(c.Command) == 0 || !path.IsAbs(c.Command[0]) || path.Clean(c.Command[0]) != c.Command[0] {
		bad("command must start with the absolute, clean path of the binary, got %q", c.Command)
	}
	for _, a := range c.Command {
		if strings.ContainsFunc(a, isControl) {
			bad("argument %q holds a control character", a)
		}
	}
	for _, v := range c.Env {
		if !envRE().MatchString(v.Name) {
			bad("environment variable name %q must match %s", v.Name, envRE)
		}
		if strings.ContainsFunc(v.Value, isControl) {
			bad("environment variable %s holds a control character", v.Name)
		}
	}
	for _, a := range append([]string{c.User, c.Group}, c.SupplementaryGroups...) {
		if !accountRE().MatchString(a) {
			bad("account %q must match %s", a, accountRE)
		}
	}
	for _, p := range append(append([]string{}, c.ReadWritePaths...), c.InaccessiblePaths...) {
		if !path.IsAbs(p) || path.Clean(p) != p || strings.ContainsFunc(p, isControl) {
			bad("path %q must be absolute and clean", p)
		}
	}
	for _, cp := range c.Capabilities {
		if !capRE().MatchString(cp) {
			bad("capability %q must match %s", cp, capRE)
		}
	}
	for _, u := range c.After {
		if !strings.HasSuffix(u, ".service") || !nameRE().MatchString(strings.TrimSuffix(u, ".service")) {
			bad("after %q must be a service unit name", u)
		}
	}
	ids := map[string]bool{}
	for _, cr := range c.Credentials {
		switch {
		case !nameRE().MatchString(cr.ID):
			bad("credential id %q must match %s", cr.ID, nameRE)
		case cr.Flag != "" && !nameRE().MatchString(cr.Flag):
			bad("credential %s: flag %q must match %s", cr.ID, cr.Flag, nameRE)
		case ids[cr.ID]:
			bad("credential id %q given twice", cr.ID)
		case !path.IsAbs(cr.Path) || path.Clean(cr.Path) != cr.Path || strings.ContainsFunc(cr.Path, isSpaceOrControl):
			bad("credential %s: path %q must be absolute and clean, without white space", cr.ID, cr.Path)
		case countArgs(c.Command, cr.credentialArg()) != 1:
			bad("credential %s: the command must have the argument %q exactly once", cr.ID, cr.credentialArg())
		}
		ids[cr.ID] = true
	}
	if strings.ContainsFunc(c.CredentialStamp, isSpaceOrControl) {
		bad("credential stamp %q holds white space", c.CredentialStamp)
	}
	return errors.Join(errs...)
}

// flag is the flag a credential serves: Flag, or ID.
func (cr Credential) flag() string {
	if cr.Flag != "" {
		return cr.Flag
	}
	return cr.ID
}

// credentialArg is the argument a credential replaces.
func (cr Credential) credentialArg() string { return "--" + cr.flag() + "=" + cr.Path }

func countArgs(argv []string, a string) int {
	n := 0
	for _, x := range argv[min(1, len(argv)):] {
		if x == a {
			n++
		}
	}
	return n
}

func isSpaceOrControl(r rune) bool { return isControl(r) || r == ' ' || r == '\t' }

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// execLine renders a command line for ExecStart=, one argument per
// continued line. Each argument is escaped (systemd.service(5), "Command
// lines"): "%" becomes "%%" (no specifier expansion) and "$" becomes "$$"
// (no environment substitution); an argument with white space, quotes,
// backslashes or ";" is double-quoted with "\\" and "\"" escapes. The
// argument a credential serves ("--FLAG=PATH") becomes "--FLAG=%d/ID", the
// one specifier systemd expands: the credentials directory.
func execLine(argv []string, creds []Credential) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = quoteArg(a)
		for _, cr := range creds {
			if i > 0 && a == cr.credentialArg() {
				parts[i] = "--" + cr.flag() + "=%d/" + cr.ID
			}
		}
	}
	return strings.Join(parts, " \\\n\t")
}

func quoteArg(a string) string {
	if a == ";" {
		return `\;` // a lone ";" would separate commands
	}
	a = strings.ReplaceAll(a, "%", "%%")
	a = strings.ReplaceAll(a, "$", "$$")
	if a != "" && !strings.ContainsAny(a, " \t\"'\\;") {
		return a
	}
	a = strings.ReplaceAll(a, `\`, `\\`)
	a = strings.ReplaceAll(a, `"`, `\"`)
	return `"` + a + `"`
}

// pathArg escapes a path for ReadWritePaths= and InaccessiblePaths=
// (space-separated lists with specifier expansion).
func pathArg(p string) string {
	p = strings.ReplaceAll(p, "%", "%%")
	if strings.ContainsAny(p, " \t\"\\") {
		p = `"` + strings.ReplaceAll(strings.ReplaceAll(p, `\`, `\\`), `"`, `\"`) + `"`
	}
	return p
}

// envValue quotes an EnvironmentFile value (systemd.exec(5): double quotes
// keep the value literal apart from "\\", "\"", "\$" and "\`" escapes).
func envValue(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`")
	return `"` + r.Replace(v) + `"`
}
