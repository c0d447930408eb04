//go:build !windows

package host

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/host/sysctl"
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
	// The structured values and the warning reach the result (the report).
	want := sysctl.Value{Key: "net.ipv4.ip_forward", Desired: "1", Effective: "1", Boot: &sysctl.Setting{File: "/etc/sysctl.d/99-admin.conf", Value: "0"}}
	if i := slices.IndexFunc(res.Sysctl, func(v sysctl.Value) bool { return v.Key == want.Key }); i < 0 || !reflect.DeepEqual(res.Sysctl[i], want) {
		t.Errorf("Sysctl = %+v, want an entry %+v", res.Sysctl, want)
	}
	if len(res.Sysctl) != 3 {
		t.Errorf("Sysctl has %d values, want one for each of the spec's 3 keys: %+v", len(res.Sysctl), res.Sysctl)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "99-admin.conf") || !strings.Contains(res.Warnings[0], "net.ipv4.ip_forward") {
		t.Errorf("Warnings = %q, want one naming the key and 99-admin.conf", res.Warnings)
	}
}

// TestSysctlEffectiveDifferenceFails: a key that no longer holds the
// spec's value after all writes (here the write of a later key changes
// it, as the kernel does for linked parameters) fails the step with
// HostPreparationFailed, naming the key with both values, and the result
// still carries every key's desired and effective value for the report.
// It was a note and a log warning, the phase Succeeded.
func TestSysctlEffectiveDifferenceFails(t *testing.T) {
	h := newTestHost(t)
	// vm.b is the same kernel value as vm.a: writing b changes a.
	a := filepath.Join(h.root, "proc/sys/vm/a")
	if err := os.WriteFile(a, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(h.root, "proc/sys/vm/b")); err != nil {
		t.Fatal(err)
	}
	cfg := &machineadm.MachineBootstrapConfig{Spec: machineadm.MachineBootstrapSpec{Host: machineadm.Host{Sysctl: map[string]string{"vm.a": "1", "vm.b": "2"}}}}
	env := h.env(nil)
	ctx := context.Background()
	steps := Steps(cfg)
	if err := Check(ctx, env, steps); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(steps, func(s Step) bool { return s.Name == StepSysctl })
	res, err := steps[i].Apply(ctx, env)
	if err == nil {
		t.Fatalf("sysctl step succeeded with vm.a effective 2, desired 1: %+v", res)
	}
	if class, hint := errclass.Of(err); class != errclass.HostPreparationFailed || !strings.Contains(hint, "sysctl") {
		t.Errorf("class %s, hint %q; want HostPreparationFailed with a sysctl hint", class, hint)
	}
	if !strings.Contains(err.Error(), `spec.host.sysctl[vm.a]: desired "1", effective "2"`) || strings.Contains(err.Error(), "vm.b]") {
		t.Errorf("error %q does not name vm.a (only) with both values", err)
	}
	want := []sysctl.Value{{Key: "vm.a", Desired: "1", Effective: "2"}, {Key: "vm.b", Desired: "2", Effective: "2"}}
	if !reflect.DeepEqual(res.Sysctl, want) {
		t.Errorf("Sysctl = %+v, want %+v", res.Sysctl, want)
	}
}
