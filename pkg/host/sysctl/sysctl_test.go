package sysctl

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRenderSortedWithHeader(t *testing.T) {
	got := string(Render(map[string]string{"vm.max_map_count": "262144", "net.ipv4.ip_forward": "1"}))
	want := Header + "net.ipv4.ip_forward = 1\nvm.max_map_count = 262144\n"
	if got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
}

func TestProcPath(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.ip_forward":                "net/ipv4/ip_forward",
		"net/ipv4/conf/eth0.100/rp_filter":   "net/ipv4/conf/eth0.100/rp_filter",
		"net.bridge.bridge-nf-call-iptables": "net/bridge/bridge-nf-call-iptables",
		"/kernel/pid_max":                    "kernel/pid_max",
	} {
		if got := ProcPath(in); got != want {
			t.Errorf("ProcPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRequiredModules(t *testing.T) {
	got := RequiredModules(map[string]string{
		"net.bridge.bridge-nf-call-iptables":  "1",
		"net.bridge.bridge-nf-call-ip6tables": "1",
		"net.netfilter.nf_conntrack_max":      "1000000",
		"net.ipv4.ip_forward":                 "1",
	})
	if !slices.Equal(got, []string{"br_netfilter", "nf_conntrack"}) {
		t.Errorf("RequiredModules = %q", got)
	}
}

func TestSetReadBackAndUnknown(t *testing.T) {
	proc := t.TempDir()
	p := filepath.Join(proc, "net/ipv4/ip_local_port_range")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("32768\t60999\n"), 0o644)
	if got, _ := Read(proc, "net.ipv4.ip_local_port_range"); got != "32768 60999" {
		t.Errorf("Read normalizes tabs: %q", got)
	}
	if err := Set(proc, "net.ipv4.ip_local_port_range", "20000  60999"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "20000  60999" {
		t.Errorf("written %q", b)
	}
	if err := Exists(proc, "net.ipv4.nope"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("Exists(unknown) = %v", err)
	}
	if err := Exists(proc, "net.ipv4"); !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Exists(directory) = %v", err)
	}
	if err := Set(proc, "net.ipv4.nope", "1"); err == nil {
		t.Error("Set(unknown) succeeded")
	}
}
