package repair

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	kubeadmcmd "k8s.io/kubernetes/cmd/kubeadm/app/cmd"

	"github.com/machineadm/machineadm/internal/testpin"

	"github.com/machineadm/machineadm/pkg/kubeadm/internal/kubeadmtest"
	"github.com/machineadm/machineadm/pkg/kubeadm/internal/stdio"
)

// runKubeconfigPhase runs the real kubeadm init phase name (a
// "kubeconfig/<name>" leaf) with its kubeconfig directory moved to
// kubeconfigDir: the single-phase command the runner drives (see
// run.Runner.Run), `kubeadm init phase kubeconfig <name>`, with
// --kubeconfig-dir added (machineadm keeps kubeadm's /etc/kubernetes), in
// a new command tree, its standard streams captured as the runner does.
func runKubeconfigPhase(t *testing.T, config, kubeconfigDir, name string) (string, error) {
	t.Helper()
	args := append([]string{"init", "phase"}, strings.Split(name, "/")...)
	args = append(args, "--config", config, "--kubeconfig-dir", kubeconfigDir)
	var out []string
	stdio.Mu.Lock()
	defer stdio.Mu.Unlock()
	err := stdio.Capture(func(l string) { out = append(out, l) }, func(stdout, stderr io.Writer) error {
		c := kubeadmcmd.NewKubeadmCommand(nil, stdout, stderr)
		c.SetArgs(args)
		if err := c.Execute(); err != nil {
			return fmt.Errorf("kubeadm init phase %s: %w", name, err)
		}
		return nil
	})
	return strings.Join(out, "\n"), err
}

// TestKubeconfigLeafConvergesAfterKill: the compiled-in kubeadm's rerun of
// kubeconfig/admin fails on an empty admin.conf (what a kill between the
// truncating open and the write leaves) and on a cut-short one, with the
// errors RepairInterruptedKubeconfigs' doc names. After the repair the
// real leaf writes the file afresh, and a rerun then keeps it ("Using
// existing kubeconfig file"); the repair leaves a whole file alone.
func TestKubeconfigLeafConvergesAfterKill(t *testing.T) {
	pki, config := kubeadmtest.PKISetup(t)
	dir := filepath.Join(t.TempDir(), "kubernetes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	admin := filepath.Join(dir, "admin.conf")
	if out, err := runKubeconfigPhase(t, config, dir, "kubeconfig/admin"); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	whole, err := os.ReadFile(admin)
	if err != nil || len(whole) == 0 {
		t.Fatalf("admin.conf after the first run: %d bytes, %v", len(whole), err)
	}
	if why := kubeconfigDamage(whole); why != "" {
		t.Fatalf("kubeadm's own admin.conf judged %q", why)
	}

	for _, tc := range []struct {
		name    string
		content []byte
		kubeadm string // kubeadm's error on its rerun before the repair
		reason  string // the repair's reason
	}{
		{"empty", nil, "failed to find CurrentContext in Contexts of the kubeconfig file", "empty (0 bytes)"},
		{"truncated YAML", whole[:unloadableCut(t, whole)], "failed to load kubeconfig file", "does not load as a kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(admin, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := runKubeconfigPhase(t, config, dir, "kubeconfig/admin")
			if err == nil || !strings.Contains(err.Error()+out, tc.kubeadm) {
				t.Fatalf("kubeadm's rerun: err %v\n%s\nwant %q", err, out, tc.kubeadm)
			}
			t.Logf("kubeadm's rerun before the repair: %v", err)
			removed, err := RepairInterruptedKubeconfigs(dir, pki, "kubeconfig/admin")
			if err != nil || len(removed) != 1 || removed[0].File != "admin.conf" || !strings.HasPrefix(removed[0].Reason, tc.reason) {
				t.Fatalf("repair: %+v %v, want admin.conf: %s", removed, err, tc.reason)
			}
			if out, err := runKubeconfigPhase(t, config, dir, "kubeconfig/admin"); err != nil {
				t.Fatalf("rerun after the repair: %v\n%s", err, out)
			}
			b, err := os.ReadFile(admin)
			if err != nil || kubeconfigDamage(b) != "" {
				t.Fatalf("admin.conf after the rerun: %v %q", err, kubeconfigDamage(b))
			}
			if removed, err := RepairInterruptedKubeconfigs(dir, pki, "kubeconfig/admin"); err != nil || len(removed) > 0 {
				t.Fatalf("repair of kubeadm's fresh file removed %+v (%v)", removed, err)
			}
			if out, err := runKubeconfigPhase(t, config, dir, "kubeconfig/admin"); err != nil || !strings.Contains(out, "Using existing kubeconfig file") {
				t.Fatalf("second rerun: %v\n%s", err, out)
			}
		})
	}
}

// unloadableCut returns the longest length at which whole, cut short,
// does not load (clientcmd.Load): a kill in the middle of its write.
func unloadableCut(t *testing.T, whole []byte) int {
	t.Helper()
	for n := len(whole) - 1; n > 0; n-- {
		if _, err := clientcmd.Load(whole[:n]); err != nil {
			return n
		}
	}
	t.Fatal("every prefix loads")
	return 0
}

// TestKubeconfigDamageEveryCut: every prefix of a kubeconfig the
// compiled-in kubeadm wrote, cut inside its content — what a kill or a
// power loss during its one plain write can leave — is judged damaged,
// unless the cut fell in the private key's PEM trailer and the file still
// holds the very same credentials. Many prefixes load (clientcmd.Load);
// kubeadm's rerun, which compares only the cluster's CA, would keep them
// with missing or half credentials. It logs the counts.
func TestKubeconfigDamageEveryCut(t *testing.T) {
	_, config := kubeadmtest.PKISetup(t)
	dir := t.TempDir()
	for _, name := range []string{"kubeconfig/admin", "kubeconfig/kubelet"} {
		if out, err := runKubeconfigPhase(t, config, dir, name); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	for _, f := range []string{"admin.conf", "kubelet.conf"} {
		whole, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		loads, working := 0, 0
		// A cut that drops only the final line end loses nothing.
		content := len(bytes.TrimRight(whole, "\n"))
		for n := range content {
			why := kubeconfigDamage(whole[:n])
			if why == "" {
				// Only a cut in the key's PEM trailer ("-----END ...
				// KEY-----") may keep the very same credentials.
				if !sameCredentials(t, whole, whole[:n]) {
					t.Fatalf("%s cut at %d of %d bytes judged whole", f, n, len(whole))
				}
				working++
				continue
			}
			if strings.HasPrefix(why, "loads but") {
				loads++
			}
		}
		t.Logf("%s (%d bytes): of %d prefixes cut inside the content, %d judged damaged (%d of them load with clientcmd.Load and are caught only by the checks after it), %d kept: cut in the key's PEM trailer, same server, CA and key pair", f, len(whole), content, content-working, loads, working)
		if loads == 0 {
			t.Errorf("%s: no prefix loads: the checks after Load are untested", f)
		}
	}
}

// sameCredentials says whether the kubeconfig cut has the same server, CA
// and client key pair in its current context as whole.
func sameCredentials(t *testing.T, whole, cut []byte) bool {
	t.Helper()
	get := func(b []byte) (string, []byte, tls.Certificate) {
		cfg, err := clientcmd.Load(b)
		if err != nil {
			t.Fatal(err)
		}
		ctx := cfg.Contexts[cfg.CurrentContext]
		u := cfg.AuthInfos[ctx.AuthInfo]
		pair, err := tls.X509KeyPair(u.ClientCertificateData, u.ClientKeyData)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.Clusters[ctx.Cluster]
		return c.Server, c.CertificateAuthorityData, pair
	}
	s1, ca1, p1 := get(whole)
	s2, ca2, p2 := get(cut)
	k1, ok := p1.PrivateKey.(interface{ Equal(crypto.PrivateKey) bool })
	return ok && s1 == s2 && bytes.Equal(ca1, ca2) && bytes.Equal(p1.Certificate[0], p2.Certificate[0]) && k1.Equal(p2.PrivateKey)
}

// TestRepairInterruptedKubeconfigsScope: only the phase's own files, only
// damaged ones, only regular files, and nothing in external CA mode (no
// ca.key: kubeadm then uses the operator's files as they are).
func TestRepairInterruptedKubeconfigsScope(t *testing.T) {
	pki, dir := t.TempDir(), t.TempDir()
	write := func(p string, content string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(pki, "ca.crt"), "a CA certificate")
	for _, f := range []string{"admin.conf", "super-admin.conf", "controller-manager.conf", "scheduler.conf", "bootstrap-kubelet.conf"} {
		write(filepath.Join(dir, f), "")
	}
	if err := os.Mkdir(filepath.Join(dir, "kubelet.conf"), 0o700); err != nil {
		t.Fatal(err)
	}
	exists := func(f string) bool {
		_, err := os.Lstat(filepath.Join(dir, f))
		return err == nil
	}

	if removed, err := RepairInterruptedKubeconfigs(dir, pki, "kubeconfig/admin"); err != nil || len(removed) > 0 {
		t.Fatalf("external CA mode (no ca.key): removed %+v (%v)", removed, err)
	}
	write(filepath.Join(pki, "ca.key"), "a CA key")
	for _, phase := range []string{"certs/apiserver", "kubelet-start", "kubeconfig", "etcd/local"} {
		if removed, _ := RepairInterruptedKubeconfigs(dir, pki, phase); len(removed) > 0 {
			t.Errorf("phase %s, which writes no kubeconfig of its own, removed %+v", phase, removed)
		}
	}
	if removed, err := RepairInterruptedKubeconfigs(dir, pki, "kubeconfig/kubelet"); err != nil || len(removed) > 0 || !exists("kubelet.conf") {
		t.Errorf("a directory where kubelet.conf goes: removed %+v (%v)", removed, err)
	}
	removed, err := RepairInterruptedKubeconfigs(dir, pki, "kubeconfig/super-admin")
	if err != nil || len(removed) != 1 || removed[0].File != "super-admin.conf" {
		t.Errorf("kubeconfig/super-admin: removed %+v (%v)", removed, err)
	}
	if !exists("admin.conf") || !exists("scheduler.conf") {
		t.Error("kubeconfig/super-admin removed another phase's file")
	}
	removed, err = RepairInterruptedKubeconfigs(dir, pki, "control-plane-prepare/kubeconfig")
	var names []string
	for _, r := range removed {
		names = append(names, r.File)
	}
	if err != nil || strings.Join(names, ",") != "admin.conf,controller-manager.conf,scheduler.conf" {
		t.Errorf("control-plane-prepare/kubeconfig removed %v (%v)", names, err)
	}
	if !exists("bootstrap-kubelet.conf") {
		t.Error("bootstrap-kubelet.conf removed: no phase here writes it with a check first")
	}

	// A file that cannot be removed: the error, and nothing said removed.
	write(filepath.Join(dir, "scheduler.conf"), "")
	testpin.Undeletable(t, filepath.Join(dir, "scheduler.conf"))
	if removed, err := RepairInterruptedKubeconfigs(dir, pki, "kubeconfig/scheduler"); err == nil || len(removed) > 0 {
		t.Errorf("an undeletable scheduler.conf: removed %+v, err %v", removed, err)
	} else if !strings.Contains(err.Error(), "scheduler.conf") {
		t.Errorf("the error does not name the file: %v", err)
	}
}

// TestKubeconfigDamageKeepsWorkingFiles: kubeconfigs an operator might
// write by hand — file references instead of embedded data, a token user —
// are whole.
func TestKubeconfigDamageKeepsWorkingFiles(t *testing.T) {
	for name, doc := range map[string]string{
		"file references": `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://192.0.2.1:6443", certificate-authority: /etc/kubernetes/pki/ca.crt}
users:
- name: u
  user: {client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem, client-key: /var/lib/kubelet/pki/kubelet-client-current.pem}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`,
		"token": `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://192.0.2.1:6443"}
users:
- name: u
  user: {token: not-a-real-token}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`,
	} {
		if why := kubeconfigDamage([]byte(doc)); why != "" {
			t.Errorf("%s: judged %q", name, why)
		}
	}
	for name, doc := range map[string]string{
		"no current context": "apiVersion: v1\nkind: Config\nclusters: []\n",
		"not YAML":           "{{{",
		"half a key":         "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://192.0.2.1:6443'}}]\nusers: [{name: u, user: {client-certificate-data: TFMwdA==}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
	} {
		if why := kubeconfigDamage([]byte(doc)); why == "" {
			t.Errorf("%s: judged whole", name)
		}
	}
}
