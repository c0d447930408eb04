//go:build !windows

package host

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSysctlReportsEffectiveValues: after all writes the sysctl step
// lists each key's desired and effective value, and warns about a key
// that a later sysctl.d file sets otherwise at boot.
func TestSysctlReportsEffectiveValues(t *testing.T) {
	h := newTestHost(t)
	override := filepath.Join(h.root, "etc/sysctl.d/99-admin.conf")
	if err := os.MkdirAll(filepath.Dir(override), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(override, []byte("net.ipv4.ip_forward = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := h.env(nil)
	var logs bytes.Buffer
	env.Log = newTextLogger(&logs)
	cfg := h.fullSpec(t, nil)
	results := runAll(t, cfg, env) // kernel modules first: br_netfilter's keys
	i := slices.IndexFunc(Steps(cfg), func(s Step) bool { return s.Name == StepSysctl })
	res := results[i]
	for _, want := range []string{
		"sysctl net.ipv4.ip_forward: desired 1, effective 1, at boot 0 (/etc/sysctl.d/99-admin.conf)",
		"sysctl net.ipv4.ip_local_port_range: desired 20000 60999, effective 20000 60999",
	} {
		if !slices.Contains(res.Notes, want) {
			t.Errorf("notes %q lack %q", res.Notes, want)
		}
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "99-admin.conf") {
		t.Errorf("no warning for the boot override:\n%s", logs.String())
	}
}
