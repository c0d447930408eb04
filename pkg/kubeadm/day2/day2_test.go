package day2

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
	certsphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/certs"

	"github.com/machineadm/machineadm/pkg/apis/machineadm/validation"
	"github.com/machineadm/machineadm/pkg/errclass"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/kubeadmtest"
	"github.com/machineadm/machineadm/pkg/kubeadm/translate"
)

// exampleInit is docs/examples/control-plane-init.yaml translated by
// machineadm and read back by kubeadm.
func exampleInit(t *testing.T, mutate func(yaml []byte) []byte) []byte {
	t.Helper()
	kubeadmtest.RequireStamped(t)
	cfg := kubeadmtest.LoadExample(t, "control-plane-init.yaml")
	docs, err := translate.Translate(cfg, kubeadmtest.Inputs(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		return mutate(docs.YAML)
	}
	return docs.YAML
}

func TestUpgradeConfigIsKubeadms(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	data, err := UpgradeConfig(UpgradeOptions{KubernetesVersion: "v1.37.2", PatchesDir: "/var/lib/machineadm/patches", IgnorePreflightErrors: []string{"Swap"}, EtcdUpgrade: true, CertificateRenewal: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: UpgradeConfiguration", "kubernetesVersion: v1.37.2", "directory: /var/lib/machineadm/patches", "- Swap"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("UpgradeConfiguration lacks %q:\n%s", want, data)
		}
	}
}

func TestPhaseArgs(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	args, err := PhaseArgs("apply", "addon/coredns", "/c.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(args, " "); got != "upgrade apply phase addon coredns --config /c.yaml" {
		t.Errorf("args %q", got)
	}
	args, err = PhaseArgs("apply", "preflight", "/c.yaml", nil)
	if err != nil || !strings.Contains(strings.Join(args, " "), "--yes") {
		t.Errorf("apply preflight must be non-interactive: %q %v", args, err)
	}
	args, err = PhaseArgs("apply", "kubeconfig", "/c.yaml", []string{"preflight", "kubeconfig", "addon/coredns"})
	if got := strings.Join(args, " "); err != nil || got != "upgrade apply --config /c.yaml --skip-phases preflight,addon/coredns --yes" {
		t.Errorf("a hidden phase runs as the whole command with the others skipped: %q %v", got, err)
	}
	if _, err := PhaseArgs("node", "upload-config", "/c.yaml", nil); err == nil {
		t.Errorf("upgrade node has no upload-config phase, but PhaseArgs found one")
	}

	// UpgradeRunner.Kubeconfig goes to the commands with --kubeconfig
	// only (kubeadm's node preflight has none); "" adds nothing.
	all := []string{"preflight", "control-plane", "kubeconfig"}
	for _, tc := range []struct{ kubeconfig, name, want string }{
		{"/k.conf", "control-plane", "upgrade node phase control-plane --config /c.yaml --kubeconfig=/k.conf"},
		{"/k.conf", "preflight", "upgrade node phase preflight --config /c.yaml"},
		{"/k.conf", "kubeconfig", "upgrade node --config /c.yaml --skip-phases preflight,control-plane --kubeconfig=/k.conf"},
		{"", "control-plane", "upgrade node phase control-plane --config /c.yaml"},
	} {
		r := &UpgradeRunner{Kubeconfig: tc.kubeconfig}
		args, _, err := upgradeArgs(upgradeTree(io.Discard), "node", tc.name, "/c.yaml", all, r.flags())
		if got := strings.Join(args, " "); err != nil || got != tc.want {
			t.Errorf("Kubeconfig %q, %s: %q %v, want %q", tc.kubeconfig, tc.name, got, err, tc.want)
		}
	}
}

// TestRegenerateAndSwap regenerates the API server's manifest with
// kubeadm's code into temporary directories and swaps it: an equal
// manifest is left alone; a changed one is backed up and replaced; one
// whose component does not become healthy is put back.
func TestRegenerateAndSwap(t *testing.T) {
	base, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	manifests := t.TempDir()
	cur, err := Regenerate(manifests, "", base, "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	original, _ := os.ReadFile(cur)
	if !bytes.Contains(original, []byte("--audit-log-maxage=30")) {
		t.Fatalf("the manifest lacks the spec's flag:\n%s", original)
	}
	again, err := Regenerate(t.TempDir(), "", base, "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	waited := 0
	s := Swap{ManifestDir: manifests, BackupDir: filepath.Join(t.TempDir(), "backup"), Wait: func() error { waited++; return nil }}
	changed, _, err := s.Component("kube-apiserver", again)
	if err != nil || changed || waited != 0 {
		t.Fatalf("an equal manifest: changed %v, waited %d, %v", changed, waited, err)
	}

	spec, err := SpecClusterConfiguration(exampleInit(t, func(y []byte) []byte {
		return bytes.Replace(y, []byte("value: \"30\""), []byte("value: \"7\""), 1)
	}))
	if err != nil {
		t.Fatal(err)
	}
	next := Overlay(base, spec)
	if base.APIServer.ExtraArgs[0].Value == next.APIServer.ExtraArgs[0].Value {
		t.Fatalf("Overlay kept the cluster's flag: %+v", next.APIServer.ExtraArgs)
	}
	newPath, err := Regenerate(t.TempDir(), "", next, "kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	// Unhealthy: rolled back.
	s.Wait = func() error { return errors.New("no healthy kube-apiserver") }
	changed, lines, err := s.Component("kube-apiserver", newPath)
	if c, _ := errclass.Of(err); err == nil || c != errclass.RolledBack || !changed {
		t.Fatalf("unhealthy component: changed %v, err %v", changed, err)
	}
	if got, _ := os.ReadFile(cur); !bytes.Equal(got, original) {
		t.Errorf("the manifest was not rolled back")
	}
	if b, _ := os.ReadFile(filepath.Join(s.BackupDir, "kube-apiserver.yaml")); !bytes.Equal(b, original) {
		t.Errorf("no backup of the manifest")
	}
	if !strings.Contains(strings.Join(lines, "\n"), "rolled back") {
		t.Errorf("lines do not say rolled back: %q", lines)
	}
	// Healthy: replaced.
	s.Wait = func() error { return nil }
	changed, _, err = s.Component("kube-apiserver", newPath)
	if err != nil || !changed {
		t.Fatalf("healthy component: changed %v, %v", changed, err)
	}
	if got, _ := os.ReadFile(cur); !bytes.Contains(got, []byte("--audit-log-maxage=7")) {
		t.Errorf("the new manifest is not in place:\n%s", got)
	}
	if fi, _ := os.Stat(cur); fi.Mode().Perm() != 0o600 {
		t.Errorf("manifest mode %v, want kubeadm's 0600", fi.Mode().Perm())
	}
}

// TestRenewExpiringAndCheckExpiration makes a PKI with kubeadm's own
// certs phase in a temporary directory, renews with kubeadm's renewal
// manager what expires within the window, and prints kubeadm's
// expiration table for it.
func TestRenewExpiringAndCheckExpiration(t *testing.T) {
	dir, _ := kubeadmtest.PKISetup(t)
	cfg, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg.CertificatesDir = dir
	if err := certsphase.CreatePKIAssets(cfg); err != nil {
		t.Fatal(err)
	}
	kdir := t.TempDir()
	before, _ := os.ReadFile(filepath.Join(dir, "apiserver.crt"))
	renewed, err := RenewExpiring(&cfg.ClusterConfiguration, kdir, 24*time.Hour, time.Now())
	if err != nil || len(renewed) != 0 {
		t.Fatalf("nothing expires within a day, renewed %+v, %v", renewed, err)
	}
	renewed, err = RenewExpiring(&cfg.ClusterConfiguration, kdir, 2*365*24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range renewed {
		names = append(names, r.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "apiserver") || len(renewed) < 5 {
		t.Errorf("renewed %v", names)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "apiserver.crt")); bytes.Equal(before, after) {
		t.Errorf("apiserver.crt not renewed")
	}
	var out bytes.Buffer
	if err := CheckExpiration(&out, []string{"--cert-dir", dir, "--kubeconfig", filepath.Join(kdir, "none.conf")}); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	if !strings.Contains(table, "CERTIFICATE AUTHORITY") || strings.Contains(table, "!MISSING! apiserver ") || !strings.Contains(table, "apiserver ") {
		t.Errorf("kubeadm's table:\n%s", table)
	}
}

// TestUpgradeRunnerReachesKubeadm runs a single-phase and a hidden phase
// of kubeadm's upgrade apply for real, on a machine without a cluster:
// kubeadm accepts the arguments and the configuration, and fails where
// it needs the cluster's credential, classified.
func TestUpgradeRunnerReachesKubeadm(t *testing.T) {
	kubeadmtest.RequireStamped(t)
	for _, p := range []string{"/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf"} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists: this machine is a node, and the test must not reach its cluster", p)
		}
	}
	data, err := UpgradeConfig(UpgradeOptions{KubernetesVersion: "v1.37.2", EtcdUpgrade: true, CertificateRenewal: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "kubeadm-upgrade.yaml")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"preflight", "kubeconfig"} {
		var lines []string
		r := &UpgradeRunner{Verb: "apply", ConfigPath: cfg, Output: func(l string) { lines = append(lines, l) }, All: []string{"preflight", "control-plane", "kubeconfig"}}
		err := r.Run(t.Context(), name, errclass.PreflightFailed, "")
		if err == nil {
			t.Fatalf("%s: kubeadm ran without a cluster", name)
		}
		msg := err.Error()
		if strings.Contains(msg, "unknown flag") || strings.Contains(msg, "unknown command") || !strings.Contains(msg, "admin.conf") {
			t.Errorf("%s: kubeadm did not get as far as the cluster's credential: %v\n%s", name, err, strings.Join(lines, "\n"))
		}
		if c, _ := errclass.Of(err); c == "" {
			t.Errorf("%s: unclassified: %v", name, err)
		}
	}
}

// TestMaxRenewBeforeIsKubeadmsLifetime: the spec's renewal window is
// bounded by the lifetime of the certificates the embedded kubeadm issues.
func TestMaxRenewBeforeIsKubeadmsLifetime(t *testing.T) {
	if validation.MaxRenewBefore != kubeadmconstants.CertificateValidityPeriod {
		t.Errorf("validation.MaxRenewBefore %s, kubeadm's certificate lifetime %s", validation.MaxRenewBefore, kubeadmconstants.CertificateValidityPeriod)
	}
}

// TestRenewExpiringSaysWhatAnExternalCASigned: a certificate that expires
// within the window and whose CA has no key here (an external CA) is not
// renewed, and RenewExpiring says so (External) instead of leaving it
// out as if it did not expire.
func TestRenewExpiringSaysWhatAnExternalCASigned(t *testing.T) {
	dir, _ := kubeadmtest.PKISetup(t)
	cfg, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg.CertificatesDir = dir
	if err := certsphase.CreatePKIAssets(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "apiserver.crt"))
	renewed, err := RenewExpiring(&cfg.ClusterConfiguration, t.TempDir(), 2*365*24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range renewed {
		if r.Name == "apiserver" {
			found = r.External && r.After.IsZero() && !r.Before.IsZero()
		}
	}
	if !found {
		t.Errorf("apiserver, signed by a CA without its key here: %+v, want it External", renewed)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "apiserver.crt")); !bytes.Equal(before, after) {
		t.Errorf("apiserver.crt renewed without the CA's key")
	}
}

// TestRenewExpiringExternalEtcdSaysNothingOfEtcd: with an external etcd
// (the spec's etcd.external) the etcd certificates, and the API server's
// etcd client certificate, are not kubeadm's to renew: even where such
// files lie in the certificates directory with no etcd CA key, no
// warning names them on every run; a CA without its key still does for
// what it signed.
func TestRenewExpiringExternalEtcdSaysNothingOfEtcd(t *testing.T) {
	dir, _ := kubeadmtest.PKISetup(t)
	cfg, err := SpecClusterConfiguration(exampleInit(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg.CertificatesDir = dir
	if err := certsphase.CreatePKIAssets(cfg); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"etcd/ca.key", "ca.key"} {
		if err := os.Remove(filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Etcd.Local = nil
	cfg.Etcd.External = &kubeadmapi.ExternalEtcd{Endpoints: []string{"https://127.0.0.1:2379"}}
	renewed, err := RenewExpiring(&cfg.ClusterConfiguration, t.TempDir(), 2*365*24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	apiserver := false
	for _, r := range renewed {
		if strings.Contains(r.Name, "etcd") {
			t.Errorf("external etcd: %+v named", r)
		}
		apiserver = apiserver || r.Name == "apiserver" && r.External
	}
	if !apiserver {
		t.Errorf("%+v: want the API server's certificate External (ca.key removed)", renewed)
	}
}
