package validation

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
)

// windowsWorker is a defaulted spec.os windows worker spec with a
// domain join, drive paths and an offline-join blob: what a Linux build
// refused before spec.os existed.
func windowsWorker(t *testing.T) *machineadm.MachineBootstrapConfig {
	t.Helper()
	c := &v1alpha1.MachineBootstrapConfig{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}
	c.Spec.OS = v1alpha1.OSWindows
	c.Spec.Role = v1alpha1.RoleWorker
	c.Spec.Kubernetes.Version = "v1.37.2"
	c.Spec.Join = &v1alpha1.Join{
		APIServerEndpoint: "cp.demo.example:6443",
		Token:             v1alpha1.SecretSource{File: `C:\ProgramData\machineadm\secrets\token`},
		CACertHashes:      []string{validCAHash},
	}
	c.Spec.Host.Containerd = &v1alpha1.Containerd{}
	c.Spec.Host.DomainJoin = &v1alpha1.DomainJoin{
		Domain:          "corp.example.com",
		OfflineJoinBlob: &v1alpha1.SecretSource{File: "C:/ProgramData/machineadm/secrets/djoin.txt"},
	}
	v1alpha1.SetDefaults(c)
	return c // the hub types are aliases of the latest version's
}

// TestWindowsDefaults checks that a spec.os windows spec gets Windows' own
// endpoint and paths on every build, and that they validate.
func TestWindowsDefaults(t *testing.T) {
	c := windowsWorker(t)
	if got := c.Spec.Node.CRISocket; got != "npipe:////./pipe/containerd-containerd" {
		t.Errorf("criSocket = %q", got)
	}
	if got := c.Spec.Host.Containerd.ConfigFile; got != "C:/Program Files/containerd/config.toml" {
		t.Errorf("containerd configFile = %q", got)
	}
	if got := c.Spec.Host.Containerd.DefaultRuntime; got != "runhcs-wcow-process" {
		t.Errorf("containerd defaultRuntime = %q", got)
	}
	if got := c.Spec.Report.Path; got != "C:/ProgramData/machineadm/report.json" {
		t.Errorf("report path = %q", got)
	}
	if c.Spec.Host.DomainJoin.Linux != nil {
		t.Error("Linux domain-join defaults filled on Windows")
	}
	r := Validate(c)
	if len(r.Errors) > 0 {
		t.Fatalf("Windows worker invalid: %v", r.Errors)
	}
	if len(r.Warnings) > 0 {
		t.Errorf("unexpected warnings: %v", r.Warnings)
	}
}

// TestWindowsRules covers the Windows-only rules of validateOS.
func TestWindowsRules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *machineadm.MachineBootstrapConfig)
		want   []fe
		warn   []string
	}{
		{"control plane refused", func(c *machineadm.MachineBootstrapConfig) { c.Spec.Role = machineadm.RoleControlPlane }, []fe{{"spec.role", inv}}, nil},
		{"linux options refused", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.Host.DomainJoin.Linux = &machineadm.LinuxDomainJoin{Keytab: "/etc/krb5.keytab"}
		}, []fe{{"spec.host.domainJoin.linux", forb}}, nil},
		{"sysctl refused", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.Host.Sysctl = map[string]string{"net.ipv4.ip_forward": "1"}
		}, []fe{{"spec.host.sysctl", forb}}, nil},
		{"unix socket warns", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.Node.CRISocket = "unix:///run/containerd/containerd.sock"
		}, nil, []string{"spec.node.criSocket"}},
		{"relative Windows path", func(c *machineadm.MachineBootstrapConfig) { c.Spec.Report.Path = `C:report.json` }, []fe{{"spec.report.path", inv}}, nil},
		{"dotdot in Windows path", func(c *machineadm.MachineBootstrapConfig) { c.Spec.Report.Path = `C:\ProgramData\..\x.json` }, []fe{{"spec.report.path", inv}}, nil},
		{"kernel modules refused", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.Host.KernelModules = []string{"br_netfilter"}
		}, []fe{{"spec.host.kernelModules", forb}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := windowsWorker(t)
			tc.mutate(c)
			r := Validate(c)
			if got, want := errorSet(r.Errors), wantSet(tc.want); !slices.Equal(got, want) {
				t.Errorf("errors: got %q, want %q (%v)", got, want, r.Errors)
			}
			var warns []string
			for _, w := range r.Warnings {
				warns = append(warns, w.Field)
			}
			if !slices.Equal(warns, tc.warn) {
				t.Errorf("warnings: got %q, want %q", warns, tc.warn)
			}
		})
	}
}

// linuxWorker is windowsWorker's spec for spec.os linux: Unix paths and a
// credentials domain join.
func linuxWorker(t *testing.T) *machineadm.MachineBootstrapConfig {
	t.Helper()
	c := &v1alpha1.MachineBootstrapConfig{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}
	c.Spec.OS = v1alpha1.OSLinux
	c.Spec.Role = v1alpha1.RoleWorker
	c.Spec.Kubernetes.Version = "v1.37.2"
	c.Spec.Join = &v1alpha1.Join{
		APIServerEndpoint: "cp.demo.example:6443",
		Token:             v1alpha1.SecretSource{File: "/etc/machineadm/secrets/token"},
		CACertHashes:      []string{validCAHash},
	}
	c.Spec.Host.Containerd = &v1alpha1.Containerd{}
	c.Spec.Host.DomainJoin = &v1alpha1.DomainJoin{
		Domain: "corp.example.com",
		Credentials: &v1alpha1.DomainCredentials{
			Username: "joiner",
			Password: v1alpha1.SecretSource{File: "/etc/machineadm/secrets/ad-password"},
		},
	}
	v1alpha1.SetDefaults(c)
	return c
}

// TestLinuxRules covers the rules of spec.os linux on every build: the
// Windows-only fields and path syntax are refused by field path.
func TestLinuxRules(t *testing.T) {
	c := linuxWorker(t)
	if got := c.Spec.Node.CRISocket; got != "unix:///run/containerd/containerd.sock" {
		t.Errorf("criSocket = %q", got)
	}
	if c.Spec.Host.DomainJoin.Linux == nil || c.Spec.Host.DomainJoin.Linux.Keytab != "/etc/krb5.keytab" {
		t.Errorf("Linux domain-join keytab not defaulted: %+v", c.Spec.Host.DomainJoin.Linux)
	}
	if r := Validate(c); len(r.Errors) > 0 || len(r.Warnings) > 0 {
		t.Fatalf("Linux worker: errors %v, warnings %v", r.Errors, r.Warnings)
	}
	cases := []struct {
		name   string
		mutate func(c *machineadm.MachineBootstrapConfig)
		want   []fe
	}{
		{"offline join blob refused", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.Host.DomainJoin.Credentials = nil
			c.Spec.Host.DomainJoin.OfflineJoinBlob = &machineadm.SecretSource{File: "/etc/machineadm/secrets/djoin"}
		}, []fe{{"spec.host.domainJoin.offlineJoinBlob", forb}}},
		{"drive path refused", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.Join.Token.File = `C:\ProgramData\machineadm\secrets\token`
			c.Spec.Report.Path = "C:/ProgramData/machineadm/report.json"
		}, []fe{{"spec.join.token.file", inv}, {"spec.report.path", inv}}},
		{"named pipe refused", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.Node.CRISocket = "npipe:////./pipe/containerd-containerd"
		}, []fe{{"spec.node.criSocket", inv}}},
		{"Windows runtime is no builtin", func(c *machineadm.MachineBootstrapConfig) {
			c.Spec.Host.Containerd.DefaultRuntime = "runhcs-wcow-process"
		}, []fe{{"spec.host.containerd.defaultRuntime", inv}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := linuxWorker(t)
			tc.mutate(c)
			r := Validate(c)
			if got, want := errorSet(r.Errors), wantSet(tc.want); !slices.Equal(got, want) {
				t.Errorf("errors: got %q, want %q (%v)", got, want, r.Errors)
			}
		})
	}
}

// TestOSDefault checks that a spec without spec.os is one for the OS
// machineadm is built for, so that specs written before the field keep
// their meaning: that OS's defaults and rules.
func TestOSDefault(t *testing.T) {
	c := &v1alpha1.MachineBootstrapConfig{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}
	c.Spec.Role = v1alpha1.RoleWorker
	c.Spec.Kubernetes.Version = "v1.37.2"
	c.Spec.Join = &v1alpha1.Join{
		APIServerEndpoint: "cp.demo.example:6443",
		Token:             v1alpha1.SecretSource{File: "/etc/machineadm/secrets/token"},
		CACertHashes:      []string{validCAHash},
	}
	c.Spec.Host.Containerd = &v1alpha1.Containerd{}
	v1alpha1.SetDefaults(c)
	if c.Spec.OS != machineadm.DefaultOS {
		t.Errorf("spec.os defaulted to %q, want %q", c.Spec.OS, machineadm.DefaultOS)
	}
	d := machineadm.DefaultsFor(machineadm.DefaultOS)
	got := machineadm.OSDefaults{
		CRISocket: c.Spec.Node.CRISocket, ContainerdConfig: c.Spec.Host.Containerd.ConfigFile,
		RuntimeName: c.Spec.Host.Containerd.DefaultRuntime, RuntimeType: d.RuntimeType,
		ReportPath: c.Spec.Report.Path, Sentinel: c.Spec.Report.Sentinel,
	}
	if got != d {
		t.Errorf("defaults of a spec without spec.os:\n got  %+v\n want %+v", got, d)
	}
	if r := Validate(c); len(r.Errors) > 0 || len(r.Warnings) > 0 {
		t.Errorf("spec without spec.os: errors %v, warnings %v", r.Errors, r.Warnings)
	}
}

// TestUnknownOS checks that a spec.os other than linux and windows is
// refused at spec.os alone.
func TestUnknownOS(t *testing.T) {
	c := &v1alpha1.MachineBootstrapConfig{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}
	c.Spec.OS = "darwin"
	c.Spec.Role = v1alpha1.RoleWorker
	c.Spec.Kubernetes.Version = "v1.37.2"
	c.Spec.Join = &v1alpha1.Join{
		APIServerEndpoint: "cp.demo.example:6443",
		Token:             v1alpha1.SecretSource{File: "/etc/machineadm/secrets/token"},
		CACertHashes:      []string{validCAHash},
	}
	v1alpha1.SetDefaults(c)
	r := Validate(c)
	if got, want := errorSet(r.Errors), wantSet([]fe{{"spec.os", nsup}}); !slices.Equal(got, want) {
		t.Errorf("errors: got %q, want %q (%v)", got, want, r.Errors)
	}
}

// TestWindowsFilesOneFileTwoSpellings: Windows file names ignore case,
// so two entries spelling one file differently
// are a duplicate, and a later readable entry of an owner-only file is
// refused as for the same spelling; both passed, the second overwriting
// the first. Linux paths keep their case.
func TestWindowsFilesOneFileTwoSpellings(t *testing.T) {
	c := windowsWorker(t)
	c.Spec.Host.Files = []machineadm.File{
		{Path: `C:\ProgramData\App\app.conf`, Content: "a"},
		{Path: `c:/programdata/app/APP.CONF`, Content: "b"},
		{Path: `C:\ProgramData\App\key`, Content: "k", Mode: "0600"},
		{Path: `C:\PROGRAMDATA\app\KEY`, Content: "more", Mode: "0644", Append: true},
	}
	v1alpha1.SetDefaults(c)
	got := map[string]bool{}
	for _, e := range Validate(c).Errors {
		got[e.Field] = true
	}
	if len(got) != 2 || !got["spec.host.files[1].path"] || !got["spec.host.files[3].mode"] {
		t.Errorf("errors %v: want spec.host.files[1].path (duplicate) and spec.host.files[3].mode (owner-only)", got)
	}
	l := base(t, worker)
	l.Spec.OS = machineadm.OSLinux // a Linux spec on any build (the wine run is a Windows build)
	l.Spec.Host.Files = []machineadm.File{{Path: "/etc/app/A", Content: "a", Mode: "0644", Owner: "0", Group: "0"}, {Path: "/etc/app/a", Content: "b", Mode: "0644", Owner: "0", Group: "0"}}
	for _, e := range Validate(l).Errors {
		if strings.HasPrefix(e.Field, "spec.host.files") {
			t.Errorf("Linux paths differing in case refused: %v", e)
		}
	}
}

// TestWindowsFileNamesWindowsHas: a Windows path whose names Windows
// reads as something else is refused by field: an alternate data stream
// ("x:ads", another file's), a device (CON, NUL, COM1, "nul.txt"), a
// name ending in a dot or space (dropped: another file than the one
// meant), characters no file name has. All were accepted.
func TestWindowsFileNamesWindowsHas(t *testing.T) {
	for _, p := range []string{`C:\ProgramData\x:ads`, `C:\con`, `C:\ProgramData\NUL.txt`, `D:\com1\x`, `C:\ProgramData\app\x.`,
		`C:\ProgramData\app \x`, `C:\ProgramData\a?b`, `C:\ProgramData\a|b`} {
		c := windowsWorker(t)
		c.Spec.Host.Files = []machineadm.File{{Path: p, Content: "x"}}
		v1alpha1.SetDefaults(c)
		if !slices.ContainsFunc(Validate(c).Errors, func(e *field.Error) bool { return e.Field == "spec.host.files[0].path" }) {
			t.Errorf("%q accepted", p)
		}
	}
	for _, p := range []string{`C:\ProgramData\console.conf`, `C:\ProgramData\auxiliary\x`, `C:\ProgramData\.hidden`, `C:/Program Files/app/x.conf`} {
		c := windowsWorker(t)
		c.Spec.Host.Files = []machineadm.File{{Path: p, Content: "x"}}
		v1alpha1.SetDefaults(c)
		if errs := Validate(c).Errors; len(errs) > 0 {
			t.Errorf("%q refused: %v", p, errs)
		}
	}
	// Linux names are not Windows': /etc/con and a trailing space pass.
	l := base(t, worker)
	l.Spec.OS = machineadm.OSLinux // a Linux spec on any build (the wine run is a Windows build)
	l.Spec.Host.Files = []machineadm.File{{Path: "/etc/app/con", Content: "a", Mode: "0644", Owner: "0", Group: "0"}, {Path: "/etc/app/a:b ", Content: "b", Mode: "0644", Owner: "0", Group: "0"}}
	for _, e := range Validate(l).Errors {
		if strings.HasPrefix(e.Field, "spec.host.files") {
			t.Errorf("Linux names refused: %v", e)
		}
	}
}
