package repair

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/kubeadmtest"
	"github.com/machineadm/machineadm/pkg/kubeadm/pki"
	"github.com/machineadm/machineadm/pkg/kubeadm/run"
	"github.com/machineadm/machineadm/pkg/version"
)

func runCertsPhase(t *testing.T, config, name string) (string, error) {
	t.Helper()
	row, ok := run.Lookup(machineadm.ActionInit, name)
	if !ok {
		t.Fatalf("no phase %s", name)
	}
	var out []string
	r := &run.Runner{Action: machineadm.ActionInit, ConfigPath: config, Output: func(l string) { out = append(out, l) }}
	err := r.Run(context.Background(), row)
	return strings.Join(out, "\n"), err
}

// TestCertsLeafConvergesAfterKill: the compiled-in kubeadm writes a
// certificate's key before the certificate, and its rerun fails on a key
// left alone (a kill between the two writes). RepairInterruptedCerts
// removes that key, and the real certs/apiserver leaf then converges. The
// same for certs/sa (sa.key without sa.pub).
func TestCertsLeafConvergesAfterKill(t *testing.T) {
	if err := version.CheckStamped(); err != nil {
		t.Skipf("%v (run `make test`)", err)
	}
	dir := filepath.Join(t.TempDir(), "pki")
	if _, err := pki.InitPKI(dir, "ECDSA-P256", nil); err != nil {
		t.Fatal(err)
	}
	// machineadm pki init makes sa too; this test lets kubeadm make it.
	for _, f := range []string{"sa.key", "sa.pub"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	config := kubeadmtest.CertsConfig(t, dir)

	// The kill after WriteKey: apiserver.key alone.
	kubeadmtest.WriteLoneKey(t, filepath.Join(dir, "apiserver.key"))
	out, err := runCertsPhase(t, config, "certs/apiserver")
	if err == nil || !strings.Contains(err.Error()+out, "failure loading apiserver certificate") {
		t.Fatalf("kubeadm's rerun with a lone key: err %v\n%s\nwant kubeadm's \"failure loading apiserver certificate\"", err, out)
	}
	removed, err := RepairInterruptedCerts(dir, "certs/apiserver", nil)
	if err != nil || !slices.Equal(removed, []string{"apiserver.key"}) {
		t.Fatalf("repair: %v %v", removed, err)
	}
	if out, err := runCertsPhase(t, config, "certs/apiserver"); err != nil {
		t.Fatalf("rerun after the repair: %v\n%s", err, out)
	}
	for _, f := range []string{"apiserver.crt", "apiserver.key"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s after the rerun: %v", f, err)
		}
	}
	// Complete now: a repair touches nothing, and kubeadm uses it.
	if removed, err := RepairInterruptedCerts(dir, "certs/apiserver", func(string) bool { return true }); err != nil || len(removed) > 0 {
		t.Errorf("repair of a complete pair removed %v (%v)", removed, err)
	}
	if out, err := runCertsPhase(t, config, "certs/apiserver"); err != nil || !strings.Contains(out, "Using existing apiserver certificate") {
		t.Errorf("second rerun: %v\n%s", err, out)
	}

	// The kill after sa.key: kubeadm's rerun keeps the key and never
	// writes sa.pub. The shared key goes only when the caller allows it.
	kubeadmtest.WriteLoneKey(t, filepath.Join(dir, "sa.key"))
	if removed, _ := RepairInterruptedCerts(dir, "certs/sa", nil); len(removed) > 0 {
		t.Fatalf("a shared key removed without permission: %v", removed)
	}
	if _, err := runCertsPhase(t, config, "certs/sa"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sa.pub")); err == nil {
		t.Fatal("kubeadm wrote sa.pub beside an existing sa.key: the claim this repair rests on is wrong")
	}
	removed, err = RepairInterruptedCerts(dir, "certs/sa", func(k string) bool { return k == "sa.key" })
	if err != nil || !slices.Equal(removed, []string{"sa.key"}) {
		t.Fatalf("repair of sa: %v %v", removed, err)
	}
	if out, err := runCertsPhase(t, config, "certs/sa"); err != nil {
		t.Fatalf("certs/sa after the repair: %v\n%s", err, out)
	}
	if fi, err := os.Stat(filepath.Join(dir, "sa.pub")); err != nil || fi.Size() == 0 {
		t.Errorf("sa.pub after the repair and rerun: %v", err)
	}
}

// TestRepairInterruptedCertsScope: only the phase's own files, an empty
// certificate counts as missing, a CA key goes only when allowed and never
// while its certificate has content.
func TestRepairInterruptedCertsScope(t *testing.T) {
	dir := t.TempDir()
	kubeadmtest.WriteLoneKey(t, filepath.Join(dir, "apiserver.key"))
	kubeadmtest.WriteLoneKey(t, filepath.Join(dir, "etcd/server.key"))
	if err := os.WriteFile(filepath.Join(dir, "etcd/server.crt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	kubeadmtest.WriteLoneKey(t, filepath.Join(dir, "front-proxy-ca.key"))
	kubeadmtest.WriteLoneKey(t, filepath.Join(dir, "ca.key"))
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	all := func(string) bool { return true }

	if removed, _ := RepairInterruptedCerts(dir, "certs/apiserver-kubelet-client", all); len(removed) > 0 {
		t.Errorf("another phase's files removed: %v", removed)
	}
	if removed, _ := RepairInterruptedCerts(dir, "kubeconfig/admin", all); len(removed) > 0 {
		t.Errorf("a phase that writes no key pair removed %v", removed)
	}
	if removed, _ := RepairInterruptedCerts(dir, "certs/etcd-server", nil); !slices.Equal(removed, []string{"etcd/server.crt", "etcd/server.key"}) {
		t.Errorf("etcd-server: removed %v, want the empty certificate and its key", removed)
	}
	if removed, _ := RepairInterruptedCerts(dir, "certs/front-proxy-ca", nil); len(removed) > 0 {
		t.Errorf("a CA key removed without permission: %v", removed)
	}
	var asked []string
	removed, _ := RepairInterruptedCerts(dir, "certs/front-proxy-ca", func(k string) bool { asked = append(asked, k); return true })
	if !slices.Equal(removed, []string{"front-proxy-ca.key"}) || !slices.Equal(asked, []string{"front-proxy-ca.key"}) {
		t.Errorf("front-proxy-ca: removed %v, asked %v", removed, asked)
	}
	if removed, _ := RepairInterruptedCerts(dir, "certs/ca", all); len(removed) > 0 {
		t.Errorf("a CA key with a certificate removed: %v", removed)
	}
	// A joining control plane's own certificates, never the CAs.
	kubeadmtest.WriteLoneKey(t, filepath.Join(dir, "front-proxy-client.key"))
	kubeadmtest.WriteLoneKey(t, filepath.Join(dir, "etcd/ca.key"))
	removed, _ = RepairInterruptedCerts(dir, "control-plane-prepare/certs", all)
	if !slices.Equal(removed, []string{"apiserver.key", "front-proxy-client.key"}) {
		t.Errorf("control-plane-prepare/certs removed %v", removed)
	}
	for _, f := range []string{"ca.key", "ca.crt", "etcd/ca.key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
