//go:build windows

package validation

import (
	"slices"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
)

// windowsWorker is a defaulted Windows worker spec with a domain join.
func windowsWorker(t *testing.T) *machineadm.MachineBootstrapConfig {
	t.Helper()
	c := &v1alpha1.MachineBootstrapConfig{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}
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

// TestWindowsDefaults checks that a Windows build defaults to Windows'
// own endpoint and paths and that they validate.
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
