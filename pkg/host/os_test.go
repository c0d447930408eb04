package host

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/errclass"
)

// foreignOS is an OS other than this machine's.
func foreignOS() machineadm.OS {
	if CurrentOS() == OSWindows {
		return machineadm.OSLinux
	}
	return machineadm.OSWindows
}

// TestStepsRefuseForeignOS: every host step refuses, in Check and in
// Apply, a spec whose spec.os is not this machine's, with class
// InvalidSpec (exit code 2) naming spec.os, and writes nothing.
func TestStepsRefuseForeignOS(t *testing.T) {
	cfg := &machineadm.MachineBootstrapConfig{}
	cfg.Spec.OS = foreignOS()
	cfg.Spec.Host.Files = []machineadm.File{{Path: "/etc/foreign-os-marker", Content: "x", Mode: "0644", Owner: "0", Group: "0"}}
	cfg.Spec.Host.Containerd = &machineadm.Containerd{}
	root := t.TempDir()
	env := &Env{Root: root, Offline: true}
	steps := Steps(cfg)
	if len(steps) == 0 {
		t.Fatal("no steps")
	}
	check := func(what string, err error) {
		t.Helper()
		if c, _ := errclass.Of(err); c != errclass.InvalidSpec || err == nil || !strings.Contains(err.Error(), "spec.os") {
			t.Errorf("%s: got %v (class %s), want InvalidSpec at spec.os", what, err, c)
		}
	}
	check("Check", Check(context.Background(), env, steps))
	for _, s := range steps {
		if s.Check != nil {
			check(s.Name+" Check", s.Check(context.Background(), env))
		}
		_, err := s.Apply(context.Background(), env)
		check(s.Name+" Apply", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) > 0 {
		t.Errorf("the host root was changed: %v", ents)
	}
	// The same spec for this machine's OS (or none: the default) passes.
	for _, o := range []machineadm.OS{machineadm.OS(CurrentOS()), ""} {
		cfg.Spec.OS = o
		if err := CheckOS(cfg); err != nil {
			t.Errorf("spec.os %q: %v", o, err)
		}
	}
}
