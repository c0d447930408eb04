package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/host/files"
	"github.com/machineadm/machineadm/pkg/host/service"
)

// versioned points the spec's binaries at versioned paths (as an upgrade
// delivers them side by side) and writes them under root.
func versioned(t *testing.T, cfg *machineadm.MachineBootstrapConfig, root, v string) {
	t.Helper()
	b := &machineadm.ControlPlaneBinaries{}
	b.Etcd = "/usr/local/bin/etcd-" + v
	b.KubeAPIServer = "/usr/local/bin/kube-apiserver-" + v
	b.KubeControllerManager = "/usr/local/bin/kube-controller-manager-" + v
	b.KubeScheduler = "/usr/local/bin/kube-scheduler-" + v
	cfg.Spec.ControlPlane.Binaries = b
	for _, p := range []string{b.Etcd, b.KubeAPIServer, b.KubeControllerManager, b.KubeScheduler} {
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, []byte(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// events records restarts and health checks in order.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, s)
}

// The upgrade replaces the four units one at a time in kubeadm's order,
// each checked healthy before the next, runs the new binaries, and a
// rerun changes nothing; an unhealthy API server is rolled back and the
// units after it are left alone.
func TestSystemdUpgradeOrderHealthAndRollback(t *testing.T) {
	cfg, docs, _ := systemdInit(t)
	root := t.TempDir()
	versioned(t, cfg, root, "v1.36.3")
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: root, Services: &service.Recorder{}}
	u := &SystemdUpgrade{Env: env, Healthy: func(context.Context, string) error { return nil }}
	_, old, err := u.components()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.Install(t.Context(), root, old, &service.Recorder{}, false, nil); err != nil {
		t.Fatal(err)
	}

	versioned(t, cfg, root, "v1.37.2")
	ev := &events{}
	rec := &service.Recorder{}
	env.Services = rec
	// Each health check logs the service manager's calls since the last.
	seen := 0
	calls := func() {
		all := rec.Snapshot()
		for _, c := range all[seen:] {
			ev.add(c)
		}
		seen = len(all)
	}
	u.Healthy = func(_ context.Context, c string) error { calls(); ev.add("healthy? " + c); return nil }
	res, err := u.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"daemon-reload", "restart etcd.service", "healthy? etcd", "daemon-reload", "restart kube-apiserver.service", "healthy? kube-apiserver",
		"daemon-reload", "restart kube-controller-manager.service", "healthy? kube-controller-manager", "daemon-reload", "restart kube-scheduler.service", "healthy? kube-scheduler"}
	if !reflect.DeepEqual(ev.log, want) {
		t.Errorf("upgrade order\n%q\nwant\n%q", ev.log, want)
	}
	if len(res.Changed()) != 4 {
		t.Errorf("changed %q", res.Changed())
	}
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		unit, _ := os.ReadFile(filepath.Join(root, cpunits.UnitDir, c+".service"))
		if got := cpunits.ExecBinary(unit); got != "/usr/local/bin/"+c+"-v1.37.2" {
			t.Errorf("%s runs %s after the upgrade", c, got)
		}
	}

	ev.log = nil
	if res, err = u.Run(t.Context()); err != nil || len(res.Changed()) != 0 || len(ev.log) != 0 {
		t.Errorf("rerun: changed %q, health checks %q, %v", res.Changed(), ev.log, err)
	}
	calls()
	if want := []string{"start etcd.service", "start kube-apiserver.service", "start kube-controller-manager.service", "start kube-scheduler.service"}; !reflect.DeepEqual(ev.log, want) {
		t.Errorf("rerun calls %q, want %q", ev.log, want)
	}

	// A broken API server: rolled back, the controller manager and the
	// scheduler untouched.
	versioned(t, cfg, root, "v1.38.0")
	ev.log = nil
	u.Healthy = func(_ context.Context, c string) error {
		calls()
		ev.add("healthy? " + c)
		unit, _ := os.ReadFile(filepath.Join(root, cpunits.UnitDir, "kube-apiserver.service"))
		if c == "kube-apiserver" && strings.Contains(cpunits.ExecBinary(unit), "v1.38.0") {
			return errors.New("livez: connection refused")
		}
		return nil
	}
	_, err = u.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("broken API server: %v", err)
	}
	for c, v := range map[string]string{"etcd": "v1.38.0", "kube-apiserver": "v1.37.2", "kube-controller-manager": "v1.37.2", "kube-scheduler": "v1.37.2"} {
		unit, _ := os.ReadFile(filepath.Join(root, cpunits.UnitDir, c+".service"))
		if got := cpunits.ExecBinary(unit); got != "/usr/local/bin/"+c+"-"+v {
			t.Errorf("after the rollback %s runs %s, want %s", c, got, v)
		}
	}
	if want := []string{"daemon-reload", "restart etcd.service", "healthy? etcd", "daemon-reload", "restart kube-apiserver.service", "healthy? kube-apiserver",
		"daemon-reload", "restart kube-apiserver.service", "healthy? kube-apiserver"}; !reflect.DeepEqual(ev.log, want) {
		t.Errorf("rollback events\n%q\nwant\n%q", ev.log, want)
	}
}

// A joined member's etcd unit keeps its member list and
// --initial-cluster-state=existing through an upgrade: only the binary
// changes.
func TestSystemdUpgradeKeepsEtcdMembers(t *testing.T) {
	cfg, docs, _ := systemdInit(t)
	root := t.TempDir()
	versioned(t, cfg, root, "v1.36.3")
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: root, Services: &service.Recorder{}}
	u := &SystemdUpgrade{Env: env}
	s, _, err := u.components()
	if err != nil {
		t.Fatal(err)
	}
	joined, err := s.EtcdComponent([]EtcdMember{{Name: "cp0", PeerURL: "https://192.0.2.9:2380"}, {Name: s.NodeName(), PeerURL: "https://192.0.2.10:2380"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.Install(t.Context(), root, []cpunits.Component{joined}, &service.Recorder{}, false, nil); err != nil {
		t.Fatal(err)
	}
	versioned(t, cfg, root, "v1.37.2")
	_, comps, err := u.components()
	if err != nil {
		t.Fatal(err)
	}
	got, want := comps[0].Command[1:], joined.Command[1:]
	if comps[0].Name != "etcd" || !reflect.DeepEqual(got, want) {
		t.Errorf("upgraded etcd flags\n%q\nwant the installed ones\n%q", got, want)
	}
}

// A dry run plans each unit's replacement and writes nothing.
func TestSystemdUpgradeDryRun(t *testing.T) {
	cfg, docs, _ := systemdInit(t)
	root := t.TempDir()
	versioned(t, cfg, root, "v1.36.3")
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: root, Services: &service.Recorder{}}
	u := &SystemdUpgrade{Env: env}
	_, old, err := u.components()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.Install(t.Context(), root, old, &service.Recorder{}, false, nil); err != nil {
		t.Fatal(err)
	}
	versioned(t, cfg, root, "v1.37.2")
	var out strings.Builder
	dry := &SystemdEnv{Config: cfg, Docs: docs, Root: root, DryRun: true, Out: &out}
	res, err := (&SystemdUpgrade{Env: dry}).Run(t.Context())
	if err != nil || len(res.Changed()) != 4 {
		t.Fatalf("dry run: %v, changed %q", err, res.Changed())
	}
	if !strings.Contains(strings.Join(dry.Plan, "\n"), "would back up and restart kube-scheduler.service") ||
		!strings.Contains(out.String(), "kube-apiserver-v1.37.2") {
		t.Errorf("plan %q\nout:\n%s", dry.Plan, out.String())
	}
	unit, _ := os.ReadFile(filepath.Join(root, cpunits.UnitDir, "kube-apiserver.service"))
	if !strings.Contains(string(unit), "kube-apiserver-v1.36.3") {
		t.Error("the dry run changed a unit")
	}
	if _, err := os.Stat(filepath.Join(root, cpunits.DefaultBackupDir)); !os.IsNotExist(err) {
		t.Errorf("the dry run made a backup: %v", err)
	}
}

// One component alone, by kubeadm's name: only its unit is replaced; an
// unknown name is refused.
func TestSystemdUpgradeOneComponent(t *testing.T) {
	cfg, docs, _ := systemdInit(t)
	root := t.TempDir()
	versioned(t, cfg, root, "v1.36.3")
	rec := &service.Recorder{}
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: root, Services: rec}
	u := &SystemdUpgrade{Env: env, Healthy: func(context.Context, string) error { return nil }}
	_, old, err := u.components()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.Install(t.Context(), root, old, &service.Recorder{}, false, nil); err != nil {
		t.Fatal(err)
	}
	versioned(t, cfg, root, "v1.37.2")
	r, err := u.Component(t.Context(), "kube-scheduler")
	if err != nil || !r.Changed || r.Unit != "kube-scheduler.service" {
		t.Fatalf("kube-scheduler: %+v, %v", r, err)
	}
	if want := []string{"daemon-reload", "restart kube-scheduler.service"}; !reflect.DeepEqual(rec.Calls, want) {
		t.Errorf("calls %q, want %q", rec.Calls, want)
	}
	unit, _ := os.ReadFile(filepath.Join(root, cpunits.UnitDir, "kube-apiserver.service"))
	if !strings.Contains(string(unit), "kube-apiserver-v1.36.3") {
		t.Error("replacing the scheduler changed the API server's unit")
	}
	if _, err := u.Component(t.Context(), "apiserver"); err == nil {
		t.Error("an unknown component was accepted")
	}
}

// An upgrade of a control plane an older machineadm made, whose etcd ran
// as kubeadm-etcd and owned its data directory and keys: the new etcd
// unit runs as etcd, so the data directory is given to etcd just before
// it starts, and its keys, which it now reads as credentials, go back to
// root once it is healthy. When it is not healthy, the rollback gives the
// data directory back to kubeadm-etcd before the old unit starts, and the
// keys were never taken from it.
func TestSystemdUpgradeMigratesEtcdAccount(t *testing.T) {
	if _, err := exec.LookPath("systemd-sysusers"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs systemd-sysusers and root")
	}
	cfg, docs, _ := systemdInit(t)
	root := t.TempDir()
	versioned(t, cfg, root, "v1.37.2")
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: root, Services: &service.Recorder{}}
	u := &SystemdUpgrade{Env: env}
	_, comps, err := u.components()
	if err != nil {
		t.Fatal(err)
	}
	old := comps[0]
	old.User, old.Group, old.Credentials = "kubeadm-etcd", "kubeadm-etcd", nil
	if _, err := cpunits.CreateUsers(t.Context(), root, []cpunits.Account{{Name: "kubeadm-etcd", Description: "old"}}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.Install(t.Context(), root, []cpunits.Component{old}, &service.Recorder{}, false, nil); err != nil {
		t.Fatal(err)
	}
	for p, content := range map[string]string{"/var/lib/etcd/member/snap/db": "data", "/etc/kubernetes/pki/etcd/server.key": "key", "/etc/kubernetes/pki/etcd/peer.key": "key"} {
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cpunits.ApplyPaths(root, []cpunits.PathRule{
		{Path: "/var/lib/etcd", Dir: true, Mode: 0o700, User: "kubeadm-etcd", Group: "kubeadm-etcd", Recursive: true},
		{Path: "/etc/kubernetes/pki/etcd/server.key", Mode: 0o600, User: "kubeadm-etcd", Group: "kubeadm-etcd"},
	}, false); err != nil {
		t.Fatal(err)
	}
	owner := func(p string) string {
		t.Helper()
		ids, err := files.LoadIDs(root)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := files.Owner(fi)
		if uid == 0 {
			return "root"
		}
		for _, name := range []string{"etcd", "kubeadm-etcd"} {
			if id, err := ids.UID(name); err == nil && id == uid {
				return name
			}
		}
		return "?"
	}
	// At the new unit's start the data directory is etcd's already.
	var atStart string
	u.Healthy = func(context.Context, string) error {
		atStart = owner("/var/lib/etcd/member/snap/db")
		unit, _ := os.ReadFile(filepath.Join(root, cpunits.UnitDir, "etcd.service"))
		if strings.Contains(string(unit), "User=etcd\n") {
			return errors.New("readyz: connection refused")
		}
		return nil
	}
	r, err := u.Component(t.Context(), "etcd")
	if err == nil || !r.RolledBack {
		t.Fatalf("unhealthy etcd: %+v, %v; want a rollback", r, err)
	}
	if got := owner("/var/lib/etcd/member/snap/db"); got != "kubeadm-etcd" || owner("/etc/kubernetes/pki/etcd/server.key") != "kubeadm-etcd" {
		t.Errorf("after the rollback: data %s, key %s; want kubeadm-etcd's, as the restored unit needs", got, owner("/etc/kubernetes/pki/etcd/server.key"))
	}

	u.Healthy = func(context.Context, string) error { atStart = owner("/var/lib/etcd/member/snap/db"); return nil }
	if _, err := u.Component(t.Context(), "etcd"); err != nil {
		t.Fatal(err)
	}
	if atStart != "etcd" {
		t.Errorf("the new etcd started with its data owned by %s", atStart)
	}
	for p, want := range map[string]string{"/var/lib/etcd": "etcd", "/var/lib/etcd/member/snap/db": "etcd", "/etc/kubernetes/pki/etcd/server.key": "root", "/etc/kubernetes/pki/etcd/peer.key": "root"} {
		if got := owner(p); got != want {
			t.Errorf("%s owned by %s, want %s", p, got, want)
		}
	}
	unit, _ := os.ReadFile(filepath.Join(root, cpunits.UnitDir, "etcd.service"))
	if !strings.Contains(string(unit), "LoadCredential=key-file:/etc/kubernetes/pki/etcd/server.key\n") {
		t.Errorf("the new unit does not load its key as a credential:\n%s", unit)
	}
}

// A run killed while the new etcd unit (User=etcd) was starting leaves
// that unit installed, its backup pending and the data directory etcd's.
// The rerun restarts it; when it is still not healthy, the rollback must
// give the data directory back to the account of the unit it restores
// (kubeadm-etcd, read from the restored unit), not to the account the
// killed run found installed before it started (already etcd).
func TestSystemdUpgradeRollbackAfterKillRestoresEtcdOwner(t *testing.T) {
	if _, err := exec.LookPath("systemd-sysusers"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs systemd-sysusers and root")
	}
	cfg, docs, _ := systemdInit(t)
	root := t.TempDir()
	versioned(t, cfg, root, "v1.37.2")
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: root, Services: &service.Recorder{}}
	u := &SystemdUpgrade{Env: env}
	_, comps, err := u.components()
	if err != nil {
		t.Fatal(err)
	}
	old := comps[0]
	old.User, old.Group, old.Credentials = "kubeadm-etcd", "kubeadm-etcd", nil
	if _, err := cpunits.CreateUsers(t.Context(), root, []cpunits.Account{{Name: "kubeadm-etcd", Description: "old"}}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.Install(t.Context(), root, []cpunits.Component{old}, &service.Recorder{}, false, nil); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(root, "/var/lib/etcd/member/snap/db")
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.ApplyPaths(root, []cpunits.PathRule{
		{Path: "/var/lib/etcd", Dir: true, Mode: 0o700, User: "kubeadm-etcd", Group: "kubeadm-etcd", Recursive: true},
	}, false); err != nil {
		t.Fatal(err)
	}
	ownerUID := func() int {
		fi, err := os.Stat(db)
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := files.Owner(fi)
		return int(uid)
	}
	ids, err := files.LoadIDs(root)
	if err != nil {
		t.Fatal(err)
	}
	oldUID, err := ids.UID("kubeadm-etcd")
	if err != nil {
		t.Fatal(err)
	}
	// The first run is killed during the health check of the new unit.
	u.Healthy = func(context.Context, string) error { runtime.Goexit(); return nil }
	done := make(chan struct{})
	go func() { defer close(done); _, _ = u.Component(t.Context(), "etcd") }()
	<-done
	if ownerUID() == int(oldUID) {
		t.Fatal("the killed run did not give the data directory to etcd; the test sets nothing up")
	}
	// The rerun finds the new unit still unhealthy and rolls back.
	u.Healthy = func(context.Context, string) error {
		unit, _ := os.ReadFile(filepath.Join(root, cpunits.UnitDir, "etcd.service"))
		if strings.Contains(string(unit), "User=etcd\n") {
			return errors.New("readyz: connection refused")
		}
		return nil
	}
	r, err := u.Component(t.Context(), "etcd")
	if err == nil || !r.RolledBack {
		t.Fatalf("rerun: %+v, %v; want a rollback to a healthy old unit", r, err)
	}
	unit, _ := os.ReadFile(filepath.Join(root, cpunits.UnitDir, "etcd.service"))
	if !strings.Contains(string(unit), "User=kubeadm-etcd\n") {
		t.Fatalf("the rollback did not restore the old unit:\n%s", unit)
	}
	if got := ownerUID(); got != int(oldUID) {
		t.Errorf("after the rollback the data directory is owned by uid %d, want kubeadm-etcd's %d, the restored unit's account", got, oldUID)
	}
}

// On a host an older machineadm made, the API server and the controller
// manager both opened sa.key themselves (root:kubeadm-sa-key-readers
// 0640). Once the new API server unit is healthy, sa.key must stay
// readable by the controller manager's installed, not yet replaced unit
// (a restart of it, or its rollback, opens the file again as
// kubeadm-kcm); it goes to root:root 0600 when the last unit that opens
// it directly is replaced.
func TestSystemdUpgradeKeepsSharedKeyForUnreplacedUnits(t *testing.T) {
	if _, err := exec.LookPath("systemd-sysusers"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs systemd-sysusers and root")
	}
	cfg, docs, _ := systemdInit(t)
	root := t.TempDir()
	versioned(t, cfg, root, "v1.37.2")
	env := &SystemdEnv{Config: cfg, Docs: docs, Root: root, Services: &service.Recorder{}}
	u := &SystemdUpgrade{Env: env, Healthy: func(context.Context, string) error { return nil }}
	_, comps, err := u.components()
	if err != nil {
		t.Fatal(err)
	}
	const readers = "kubeadm-sa-key-readers"
	if _, err := cpunits.CreateUsers(t.Context(), root, []cpunits.Account{{Name: readers, GroupOnly: true}}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.CreateUsers(t.Context(), root, cpunits.Accounts(true), nil, false); err != nil {
		t.Fatal(err)
	}
	var olds []cpunits.Component
	for _, c := range comps {
		if c.Name == "kube-apiserver" || c.Name == "kube-controller-manager" {
			c.Credentials, c.SupplementaryGroups = nil, []string{readers}
			olds = append(olds, c)
		}
	}
	if _, err := cpunits.Install(t.Context(), root, olds, &service.Recorder{}, false, nil); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(root, "/etc/kubernetes/pki/sa.key")
	if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cpunits.ApplyPaths(root, []cpunits.PathRule{{Path: strings.TrimPrefix(key, root), Mode: 0o640, User: "0", Group: readers}}, false); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		fi, err := os.Stat(key)
		if err != nil {
			t.Fatal(err)
		}
		_, gid := files.Owner(fi)
		return fmt.Sprintf("gid %d mode %o", gid, fi.Mode().Perm())
	}
	before := state()
	if _, err := u.Component(t.Context(), "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != before {
		t.Errorf("with the controller manager's old unit still installed, sa.key went from %s to %s: that unit cannot open it again", before, got)
	}
	if _, err := u.Component(t.Context(), "kube-controller-manager"); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != "gid 0 mode 600" {
		t.Errorf("once no unit opens sa.key directly it is %s, want root's 0600", got)
	}
}
