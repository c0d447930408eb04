package kmod

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	if got := string(Render([]string{"overlay", "br_netfilter"})); got != Header+"overlay\nbr_netfilter\n" {
		t.Errorf("Render = %q", got)
	}
}

func TestPresent(t *testing.T) {
	sys, proc := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(sys, "module/nf_conntrack"), 0o755)
	os.MkdirAll(filepath.Join(proc, "sys/net/bridge"), 0o755)
	os.WriteFile(filepath.Join(proc, "sys/net/bridge/bridge-nf-call-iptables"), []byte("1"), 0o644)
	os.WriteFile(filepath.Join(proc, "filesystems"), []byte("nodev\tproc\nnodev\toverlay\n"), 0o644)
	for name, want := range map[string]bool{
		"nf_conntrack": true, "nf-conntrack": true, // dashes and underscores are one
		"br_netfilter": true, // built in: only its sysctl keys show
		"overlay":      true, // built in: only /proc/filesystems shows
		"ip_vs":        false,
	} {
		if got := Present(sys, proc, name); got != want {
			t.Errorf("Present(%s) = %v, want %v", name, got, want)
		}
	}
	if ModulesSupported(proc) {
		t.Error("no proc/modules: modules not supported")
	}
}

// TestModprobeMissingModule runs the real modprobe when it exists.
func TestModprobeMissingModule(t *testing.T) {
	m := Modprobe{}
	if _, err := m.Binary(); err != nil {
		if err := m.Load(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "modprobe not found") {
			t.Errorf("Load without modprobe: %v", err)
		}
		return
	}
	if err := m.Load(context.Background(), "machineadm_no_such_module"); err == nil {
		t.Error("modprobe of a missing module succeeded")
	}
}
