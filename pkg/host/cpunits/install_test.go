//go:build !windows

package cpunits_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/service"
)

func sampleComps() []cpunits.Component {
	etcd := cpunits.Component{Name: "etcd", Description: "etcd", User: "kubeadm-etcd", Group: "kubeadm-etcd",
		Command: []string{"/usr/local/bin/etcd", "--data-dir=/var/lib/etcd"}, ReadWritePaths: []string{"/var/lib/etcd"}}
	return []cpunits.Component{etcd, apiserver()}
}

// Install writes and enables the units, reloads once and restarts what
// changed; a second Install only starts (no-ops on running units); a
// changed unit alone is restarted.
func TestInstallIdempotent(t *testing.T) {
	root := t.TempDir()
	rec := &service.Recorder{}
	res, err := cpunits.Install(t.Context(), root, sampleComps(), rec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"daemon-reload", "restart etcd.service", "restart kube-apiserver.service"}; !reflect.DeepEqual(rec.Calls, want) {
		t.Errorf("first install calls %q, want %q", rec.Calls, want)
	}
	if len(res.Changed) != 2 {
		t.Errorf("changed %q", res.Changed)
	}
	link, err := os.Readlink(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/etcd.service"))
	if err != nil || link != "/etc/systemd/system/etcd.service" {
		t.Errorf("enable link %q, %v", link, err)
	}
	fi, err := os.Stat(filepath.Join(root, "etc/machineadm/units/kube-apiserver.env"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("env file: %v %v", fi, err)
	}

	rec.Calls = nil
	res, err = cpunits.Install(t.Context(), root, sampleComps(), rec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"start etcd.service", "start kube-apiserver.service"}; !reflect.DeepEqual(rec.Calls, want) || len(res.Changed) != 0 {
		t.Errorf("second install calls %q (changed %q), want %q", rec.Calls, res.Changed, want)
	}

	rec.Calls = nil
	comps := sampleComps()
	comps[1].Command = append(comps[1].Command, "--v=2")
	if _, err = cpunits.Install(t.Context(), root, comps, rec, false, nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"daemon-reload", "start etcd.service", "restart kube-apiserver.service"}; !reflect.DeepEqual(rec.Calls, want) {
		t.Errorf("changed apiserver calls %q, want %q", rec.Calls, want)
	}
}

// TestInstallStopTimeoutOnlyReloads: a unit file an earlier machineadm
// wrote with another stop timeout (TimeoutStopSec=60) is rewritten and
// systemd reloaded, but the running unit is not restarted for it: the
// reload applies a stop timeout. A unit whose file differs in anything
// else (here its ExecStart) is still restarted.
func TestInstallStopTimeoutOnlyReloads(t *testing.T) {
	root := t.TempDir()
	rec := &service.Recorder{}
	if _, err := cpunits.Install(t.Context(), root, sampleComps(), rec, false, nil); err != nil {
		t.Fatal(err)
	}
	edit := func(unit, from, to string) {
		t.Helper()
		p := filepath.Join(root, "etc/systemd/system", unit)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), from) {
			t.Fatalf("%s lacks %q", unit, from)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), from, to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("etcd.service", "TimeoutStopSec=30\n", "TimeoutStopSec=60\n")
	edit("kube-apiserver.service", "TimeoutStopSec=30\n", "TimeoutStopSec=60\n")
	rec.Calls = nil
	res, err := cpunits.Install(t.Context(), root, sampleComps(), rec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"daemon-reload", "start etcd.service", "start kube-apiserver.service"}; !reflect.DeepEqual(rec.Calls, want) || len(res.Changed) != 2 {
		t.Errorf("calls %q (changed %q) for a stop timeout changed alone, want %q", rec.Calls, res.Changed, want)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/systemd/system/etcd.service")); err != nil || !strings.Contains(string(b), "TimeoutStopSec=30\n") {
		t.Errorf("etcd.service not rewritten with TimeoutStopSec=30: %v\n%s", err, b)
	}

	edit("etcd.service", "TimeoutStopSec=30\n", "TimeoutStopSec=60\n")
	edit("etcd.service", "--data-dir=/var/lib/etcd", "--data-dir=/var/lib/etcd-old")
	rec.Calls = nil
	if _, err := cpunits.Install(t.Context(), root, sampleComps(), rec, false, nil); err != nil {
		t.Fatal(err)
	}
	if want := []string{"daemon-reload", "restart etcd.service", "start kube-apiserver.service"}; !reflect.DeepEqual(rec.Calls, want) {
		t.Errorf("calls %q for a unit changed beyond its stop timeout, want %q", rec.Calls, want)
	}
}

// A dry run and a failing start: nothing written by the dry run, the
// start error is returned.
func TestInstallDryRunAndFailure(t *testing.T) {
	root := t.TempDir()
	rec := &service.Recorder{}
	var out strings.Builder
	if _, err := cpunits.Install(t.Context(), root, sampleComps(), rec, true, &out); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 || len(rec.Calls) != 0 {
		t.Errorf("dry run wrote %v or called %q", entries, rec.Calls)
	}
	if !strings.Contains(out.String(), "ExecStart=/usr/local/bin/etcd") || strings.Contains(out.String(), "p@ss") {
		t.Errorf("dry-run plan lacks the unit or shows the secret environment:\n%s", out.String())
	}
	rec.RestartErr = &service.JobError{Unit: "etcd.service", Result: "failed"}
	if _, err := cpunits.Install(t.Context(), root, sampleComps(), rec, false, nil); err == nil {
		t.Error("a failed start job was not reported")
	}
}

// CreateUsers declares the accounts for systemd-sysusers, which creates
// them in the root's databases (once: a rerun adds nothing); ApplyPaths
// gives owners and modes and reports nothing the second time.
func TestCreateUsersAndApplyPaths(t *testing.T) {
	if _, err := exec.LookPath("systemd-sysusers"); err != nil {
		t.Skip("systemd-sysusers not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to change owners")
	}
	root := t.TempDir()
	for p, c := range map[string]string{"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n", "etc/group": "root:x:0:\n",
		"etc/kubernetes/pki/etcd/server.key": "k", "var/lib/etcd/member/snap/db": "d"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	accounts := []cpunits.Account{{Name: "kubeadm-sa-key-readers", GroupOnly: true}, {Name: "kubeadm-etcd", Description: "etcd"},
		{Name: "kubeadm-kas", Description: "kube-apiserver", MemberOf: []string{"kubeadm-sa-key-readers"}}}
	for i := 0; i < 2; i++ {
		if _, err := cpunits.CreateUsers(t.Context(), root, accounts, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
	group, _ := os.ReadFile(filepath.Join(root, "etc/group"))
	if strings.Count(string(passwd), "kubeadm-etcd:") != 1 || !strings.Contains(string(group), ":kubeadm-kas") {
		t.Fatalf("accounts not created once:\n%s\n%s", passwd, group)
	}
	rules := []cpunits.PathRule{
		{Path: "/var/lib/etcd", Dir: true, Mode: 0o700, User: "kubeadm-etcd", Group: "kubeadm-etcd", Recursive: true},
		{Path: "/etc/kubernetes/pki/etcd/server.key", Mode: 0o600, User: "kubeadm-etcd", Group: "kubeadm-etcd"},
		{Path: "/etc/kubernetes/pki/ca.key", Mode: 0o600, User: "kubeadm-kas", Group: "kubeadm-kas", Optional: true},
		{Path: "/usr/libexec/kubernetes/kubelet-plugins/volume/exec", Dir: true, Mode: 0o755, User: "0", Group: "0"},
	}
	changes, err := cpunits.ApplyPaths(root, rules, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 4 {
		t.Errorf("changes %q", changes)
	}
	fi, _ := os.Stat(filepath.Join(root, "var/lib/etcd/member/snap/db"))
	top, _ := os.Stat(filepath.Join(root, "var/lib/etcd"))
	if fi.Sys().(*syscall.Stat_t).Uid == 0 || top.Mode().Perm() != 0o700 {
		t.Errorf("etcd data not owned by kubeadm-etcd or not 0700")
	}
	if changes, err := cpunits.ApplyPaths(root, rules, false); err != nil || len(changes) != 0 {
		t.Errorf("second ApplyPaths: %q, %v", changes, err)
	}
	rules = append(rules, cpunits.PathRule{Path: "/etc/kubernetes/scheduler.conf", Mode: 0o600, User: "0", Group: "0"})
	if _, err := cpunits.ApplyPaths(root, rules, false); err == nil {
		t.Error("a missing required file was accepted")
	}
}

// An account name that already belongs to a login user (a login shell,
// or uid 0) or to a group with other members is refused before anything
// is written: systemd-sysusers would leave it alone, and the control
// plane would run as it (etcd's data directory, with every Secret, owned
// by a login user). An existing account without login is adopted.
func TestCreateUsersRefusesLoginUserOfTheName(t *testing.T) {
	for name, tc := range map[string]struct {
		passwd, group string
		ok            bool
	}{
		"login user":                 {passwd: "etcd:x:1001:1001:Alice:/home/etcd:/bin/bash\n", group: "etcd:x:1001:\n"},
		"default shell":              {passwd: "etcd:x:1001:1001::/home/etcd:\n", group: "etcd:x:1001:\n"},
		"system user with a shell":   {passwd: "etcd:x:120:120::/var/lib/etcd:/bin/sh\n", group: "etcd:x:120:\n"},
		"root's alias":               {passwd: "etcd:x:0:0::/root:/usr/sbin/nologin\n"},
		"group with people":          {group: "etcd:x:1001:alice\n"},
		"system account":             {passwd: "etcd:x:120:120:etcd:/var/lib/etcd:/usr/sbin/nologin\n", group: "etcd:x:120:\n", ok: true},
		"service user without login": {passwd: "etcd:x:1234:1234::/var/lib/etcd:/bin/false\n", group: "etcd:x:1234:etcd\n", ok: true},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for p, c := range map[string]string{"etc/passwd": "root:x:0:0:root:/root:/bin/sh\n" + tc.passwd, "etc/group": "root:x:0:\n" + tc.group} {
				if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ran := false
			run := func(context.Context, string, ...string) ([]byte, error) { ran = true; return nil, nil }
			_, err := cpunits.CreateUsers(t.Context(), root, []cpunits.Account{{Name: "etcd", Description: "etcd"}}, run, false)
			_, serr := os.Stat(filepath.Join(root, cpunits.SysusersPath))
			switch {
			case tc.ok && (err != nil || !ran):
				t.Errorf("an existing system account: %v (sysusers ran %v)", err, ran)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), `"etcd"`)):
				t.Errorf("an existing regular account was adopted: %v", err)
			case !tc.ok && (ran || serr == nil):
				t.Errorf("refused, but sysusers ran (%v) or its file was written (%v)", ran, serr)
			}
		})
	}
}
