package systemd

import (
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/kubeadmtest"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
)

// A separate --wal-dir (etcd's extraArgs) outside the data directory is
// etcd's as the data directory is: 0700 etcd:etcd, and every entry in it
// too (Recursive: the same walk, with the same refusals); a WAL
// directory moved from root's etcd otherwise keeps root's segments,
// which etcd then cannot write.
func TestSystemdEtcdWALDirIsWalked(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-systemd.yaml")
	cfg.Spec.ControlPlane.Etcd.Local.ExtraArgs = append(cfg.Spec.ControlPlane.Etcd.Local.ExtraArgs, machineadm.Arg{Name: "wal-dir", Value: "/var/lib/etcd-wal"})
	in := kubeadmtest.Inputs(cfg)
	in.PatchesDir = t.TempDir()
	docs, err := translate.Translate(cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSystemdControlPlane(cfg, docs)
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := s.EtcdComponent(nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range s.EtcdPathRules(etcd) {
		if r.Path != "/var/lib/etcd-wal" {
			continue
		}
		found = true
		if !r.Dir || !r.Recursive || r.Mode != 0o700 || r.User != EtcdUser || r.Group != EtcdUser {
			t.Errorf("--wal-dir rule %+v, want a Recursive directory 0700 %s:%s", r, EtcdUser, EtcdUser)
		}
	}
	if !found {
		t.Errorf("no rule for --wal-dir /var/lib/etcd-wal in %+v", s.EtcdPathRules(etcd))
	}
	// The upgrade's rules are the same.
	for _, r := range s.pathRules(etcd) {
		if r.Path == "/var/lib/etcd-wal" && !r.Recursive {
			t.Errorf("upgrade's --wal-dir rule %+v is not Recursive", r)
		}
	}
}

// A careless --wal-dir that holds what the rest of the control plane
// owns (/etc/kubernetes, with the certificates and admin.conf) or the
// system shares (/var/lib, /var/lib/etcd/..) is refused by the rules'
// ApplyPaths, in a dry run too, before anything is given to etcd: the
// Recursive walk gave etcd every key and kubeconfig there.
func TestSystemdEtcdWALDirSharedRefused(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	for _, wal := range []string{"/etc/kubernetes", "/var/lib", "/var/lib/etcd/.."} {
		cfg := kubeadmtest.LoadExample(t, "control-plane-systemd.yaml")
		cfg.Spec.ControlPlane.Etcd.Local.ExtraArgs = append(cfg.Spec.ControlPlane.Etcd.Local.ExtraArgs, machineadm.Arg{Name: "wal-dir", Value: wal})
		in := kubeadmtest.Inputs(cfg)
		in.PatchesDir = t.TempDir()
		docs, err := translate.Translate(cfg, in)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSystemdControlPlane(cfg, docs)
		if err != nil {
			t.Fatal(err)
		}
		etcd, err := s.EtcdComponent(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, rules := range [][]cpunits.PathRule{s.EtcdPathRules(etcd), s.pathRules(etcd)} {
			if _, err := cpunits.ApplyPaths(t.TempDir(), rules, true); err == nil || !strings.Contains(err.Error(), "directory of its own") {
				t.Errorf("--wal-dir=%s: ApplyPaths: %v, want a refusal", wal, err)
			}
		}
	}
}
