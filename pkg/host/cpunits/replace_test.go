//go:build !windows

package cpunits_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/host/service"
)

// upgradeRoot is a host with the API server unit installed, running the
// binary at oldBin (content "old").
func upgradeRoot(t *testing.T, oldBin string) (string, cpunits.Component) {
	t.Helper()
	root := t.TempDir()
	c := apiserver()
	c.Command[0] = oldBin
	writeHost(t, root, oldBin, "old")
	if _, err := cpunits.Install(t.Context(), root, []cpunits.Component{c}, &service.Recorder{}, false, nil); err != nil {
		t.Fatal(err)
	}
	return root, c
}

func writeHost(t *testing.T, root, p, content string) {
	t.Helper()
	hp := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		t.Fatal(err)
	}
	// As the files phase does: a new file renamed over the old one.
	if err := files.WriteAtomic(hp, []byte(content), 0o755, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
}

func readHost(t *testing.T, root, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func healthy(context.Context) error { return nil }

// A new binary path and flag: backed up, written, reloaded, restarted,
// checked; a second Replace only starts the unit.
func TestReplaceUpgradesOnceAndIsIdempotent(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver-v1.36.3")
	oldUnit := readHost(t, root, c.UnitPath())
	writeHost(t, root, "/usr/local/bin/kube-apiserver-v1.37.2", "new")
	c.Command[0] = "/usr/local/bin/kube-apiserver-v1.37.2"
	c.Command = append(c.Command, "--audit-policy-file=/etc/kubernetes/audit.yaml")
	rec := &service.Recorder{}
	checks := 0
	opts := cpunits.ReplaceOptions{Root: root, Manager: rec, Healthy: func(context.Context) error { checks++; return nil }}
	res, err := cpunits.Replace(t.Context(), c, opts)
	if err != nil || !res.Changed || res.RolledBack {
		t.Fatalf("Replace: %+v, %v", res, err)
	}
	if want := []string{"daemon-reload", "restart kube-apiserver.service"}; !reflect.DeepEqual(rec.Calls, want) || checks != 1 {
		t.Errorf("calls %q, health checks %d; want %q and 1", rec.Calls, checks, want)
	}
	if u := readHost(t, root, c.UnitPath()); !strings.Contains(u, "ExecStart=/usr/local/bin/kube-apiserver-v1.37.2") || !strings.Contains(u, "--audit-policy-file") {
		t.Errorf("unit not replaced:\n%s", u)
	}
	backup := filepath.Join(root, cpunits.DefaultBackupDir, "kube-apiserver")
	if got := readHost(t, "/", filepath.Join(backup, "unit")); got != oldUnit {
		t.Errorf("backed-up unit differs from the old one")
	}
	if got := readHost(t, "/", filepath.Join(backup, "binary")); got != "old" {
		t.Errorf("backed-up binary %q, want the old one", got)
	}
	if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("backup directory: %v, %v", fi, err)
	}

	rec.Calls = nil
	res, err = cpunits.Replace(t.Context(), c, opts)
	if err != nil || res.Changed {
		t.Fatalf("second Replace: %+v, %v", res, err)
	}
	if want := []string{"start kube-apiserver.service"}; !reflect.DeepEqual(rec.Calls, want) || checks != 1 {
		t.Errorf("second Replace calls %q, checks %d; want %q and no check", rec.Calls, checks, want)
	}
}

// An unhealthy replacement is rolled back: the old unit, environment
// file and binary are back, the unit restarted and checked again, the
// error says so; a rerun tries the change again.
func TestReplaceRollsBackUnhealthy(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	oldUnit, oldEnv := readHost(t, root, c.UnitPath()), readHost(t, root, c.EnvPath())
	if _, err := cpunits.Backup(root, "", c); err != nil {
		t.Fatal(err)
	}
	// The files phase replaces the binary in place after the backup.
	writeHost(t, root, "/usr/local/bin/kube-apiserver", "new, broken")
	c.Env = append(c.Env, cpunits.EnvVar{Name: "GODEBUG", Value: "x=1"})
	rec := &service.Recorder{}
	var seen []string
	opts := cpunits.ReplaceOptions{Root: root, Manager: rec, Healthy: func(context.Context) error {
		seen = append(seen, readHost(t, root, "/usr/local/bin/kube-apiserver"))
		if len(seen) == 1 {
			return errors.New("livez: connection refused")
		}
		return nil
	}}
	res, err := cpunits.Replace(t.Context(), c, opts)
	if err == nil || !strings.Contains(err.Error(), "rolled back") || !res.RolledBack || errors.Is(err, cpunits.ErrRollbackUnhealthy) {
		t.Fatalf("Replace of an unhealthy unit: %+v, %v", res, err)
	}
	if want := []string{"new, broken", "old"}; !reflect.DeepEqual(seen, want) {
		t.Errorf("binary at each health check %q, want %q", seen, want)
	}
	if readHost(t, root, c.UnitPath()) != oldUnit || readHost(t, root, c.EnvPath()) != oldEnv {
		t.Error("unit or environment file not rolled back")
	}
	if want := []string{"daemon-reload", "restart kube-apiserver.service", "daemon-reload", "restart kube-apiserver.service"}; !reflect.DeepEqual(rec.Calls, want) {
		t.Errorf("calls %q, want %q", rec.Calls, want)
	}

	// The operator delivers a good binary: the rerun replaces again.
	writeHost(t, root, "/usr/local/bin/kube-apiserver", "new, good")
	res, err = cpunits.Replace(t.Context(), c, opts)
	if err != nil || !res.Changed || res.RolledBack {
		t.Fatalf("rerun: %+v, %v", res, err)
	}
}

// A run killed after writing the new unit and before it was seen
// healthy: the rerun keeps the backup of the state before (not the half
// done one), restarts the unit and checks it, and an unhealthy rerun
// rolls back to the state before the first run.
func TestReplaceAfterKillKeepsFirstBackup(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver-v1.36.3")
	oldUnit := readHost(t, root, c.UnitPath())
	writeHost(t, root, "/usr/local/bin/kube-apiserver-v1.37.2", "new")
	c.Command[0] = "/usr/local/bin/kube-apiserver-v1.37.2"
	// "SIGKILL" at the restart: the host as it is at that moment is
	// copied, and the rerun runs on the copy.
	crashed := filepath.Join(t.TempDir(), "root")
	rec := &service.Recorder{OnRestart: func(string) error {
		if out, err := exec.Command("cp", "-a", root, crashed).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
		return errors.New("killed")
	}}
	cpunits.Replace(t.Context(), c, cpunits.ReplaceOptions{Root: root, Manager: rec, Healthy: healthy})

	rec2 := &service.Recorder{}
	res, err := cpunits.Replace(t.Context(), c, cpunits.ReplaceOptions{Root: crashed, Manager: rec2,
		Healthy: func(context.Context) error { return errors.New("not ready") }})
	if err == nil || !res.RolledBack || !errors.Is(err, cpunits.ErrRollbackUnhealthy) {
		t.Fatalf("rerun: %+v, %v", res, err)
	}
	if readHost(t, crashed, c.UnitPath()) != oldUnit {
		t.Error("the rerun rolled back to the half-done unit, not to the one before the first run")
	}
	if !strings.Contains(strings.Join(res.Changes, "\n"), "kept the backup of an interrupted replacement") {
		t.Errorf("changes %q", res.Changes)
	}
}

// The same binary path with new content and no backup record (the first
// change after bootstrap): a binary newer than the unit is a change.
func TestReplaceBinaryReplacedInPlace(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	later := time.Now().Add(time.Minute)
	writeHost(t, root, "/usr/local/bin/kube-apiserver", "new")
	if err := os.Chtimes(filepath.Join(root, "usr/local/bin/kube-apiserver"), later, later); err != nil {
		t.Fatal(err)
	}
	rec := &service.Recorder{}
	opts := cpunits.ReplaceOptions{Root: root, Manager: rec, Healthy: healthy}
	res, err := cpunits.Replace(t.Context(), c, opts)
	if err != nil || !res.Changed {
		t.Fatalf("Replace: %+v, %v", res, err)
	}
	// Now the record knows the binary: unchanged on a rerun.
	if res, err = cpunits.Replace(t.Context(), c, opts); err != nil || res.Changed {
		t.Fatalf("rerun: %+v, %v", res, err)
	}
}

// A dry run lists the change and touches nothing.
func TestReplaceDryRun(t *testing.T) {
	root, c := upgradeRoot(t, "/usr/local/bin/kube-apiserver")
	before := readHost(t, root, c.UnitPath())
	c.Command = append(c.Command, "--v=2")
	var out strings.Builder
	res, err := cpunits.Replace(t.Context(), c, cpunits.ReplaceOptions{Root: root, DryRun: true, Out: &out})
	if err != nil || !res.Changed || !strings.Contains(out.String(), "+\t--v=2") && !strings.Contains(out.String(), "--v=2") {
		t.Fatalf("dry run: %+v, %v\n%s", res, err, out.String())
	}
	if readHost(t, root, c.UnitPath()) != before {
		t.Error("dry run changed the unit")
	}
	if _, err := os.Stat(filepath.Join(root, cpunits.DefaultBackupDir)); !os.IsNotExist(err) {
		t.Errorf("dry run made a backup: %v", err)
	}
}

func TestExecBinary(t *testing.T) {
	for in, want := range map[string]string{
		"[Service]\nExecStart=/usr/bin/etcd \\\n\t--name=a\n": "/usr/bin/etcd",
		"ExecStart=/opt/k8s/kube-apiserver\n":                 "/opt/k8s/kube-apiserver",
		"ExecStart=\"/opt/my dir/etcd\" \\\n":                 "/opt/my dir/etcd",
		"ExecStart=/opt/100%%/etcd\n":                         "/opt/100%/etcd",
		"[Service]\n":                                         "",
	} {
		if got := cpunits.ExecBinary([]byte(in)); got != want {
			t.Errorf("ExecBinary(%q) = %q, want %q", in, got, want)
		}
	}
}
