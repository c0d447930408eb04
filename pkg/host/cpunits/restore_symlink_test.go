//go:build !windows

package cpunits_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/service"
)

// A rollback writes no file through a name someone planted beside the
// files it restores: a symlink to /etc/shadow named as a fixed temporary
// name beside the unit file, the environment file and the binary (which
// may lie in a directory a non-root user writes) is neither followed nor
// renamed into place; each file is written new and renamed over its name.
func TestReplaceRollbackWritesNoPlantedName(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	hostEtc(t, root)
	shadow := filepath.Join(root, "etc/shadow")
	oldUnit, oldEnv := readHost(t, root, c.UnitPath()), readHost(t, root, c.EnvPath())
	if _, err := cpunits.Backup(root, "", c); err != nil {
		t.Fatal(err)
	}
	writeHost(t, root, "/usr/local/bin/kube-apiserver", "new, broken")
	c.Env = append(c.Env, cpunits.EnvVar{Name: "GODEBUG", Value: "x=1"})
	restored := []string{c.UnitPath(), c.EnvPath(), "/usr/local/bin/kube-apiserver"}
	for _, p := range restored {
		if err := os.Symlink(shadow, filepath.Join(root, p)+".machineadm-restore"); err != nil {
			t.Fatal(err)
		}
	}
	checks := 0
	opts := cpunits.ReplaceOptions{Root: root, Manager: &service.Recorder{}, Healthy: func(context.Context) error {
		if checks++; checks == 1 {
			return errors.New("livez: connection refused")
		}
		return nil
	}}
	res, err := cpunits.Replace(t.Context(), c, opts)
	if err == nil || !res.RolledBack {
		t.Fatalf("Replace of an unhealthy unit: %+v, %v; want a rollback", res, err)
	}
	if got := readHost(t, "/", shadow); got != "secret\n" {
		t.Errorf("%s written through a planted symlink: %q", shadow, got)
	}
	if fi, err := os.Stat(shadow); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("%s: %v, %v; want mode 0640 kept", shadow, fi, err)
	}
	for _, p := range restored {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s after the rollback: %v, %v; want a regular file", p, fi, err)
		}
	}
	if readHost(t, root, c.UnitPath()) != oldUnit || readHost(t, root, c.EnvPath()) != oldEnv || readHost(t, root, "/usr/local/bin/kube-apiserver") != "old" {
		t.Error("unit, environment file or binary not rolled back")
	}
	ents, err := os.ReadDir(filepath.Join(root, "usr/local/bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
