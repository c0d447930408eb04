package phases

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/upgrade"
)

func auditSpec() *machineadm.MachineBootstrapConfig {
	c := &machineadm.MachineBootstrapConfig{APIVersion: machineadm.LatestAPIVersion, Kind: machineadm.Kind}
	c.Spec.Role, c.Spec.Action = machineadm.RoleControlPlane, machineadm.ActionInit
	c.Spec.ControlPlane = &machineadm.ControlPlane{}
	c.Spec.ControlPlane.APIServer.Audit = &machineadm.Audit{Policy: map[string]any{"rules": []any{map[string]any{"level": "Metadata"}}}}
	return c
}

// TestAPIServerConfigDigest: the digest follows the content of the files
// the typed settings point the API server at (a new audit policy alone
// restarts the API server), is stable for the same content, is "" without
// typed settings, and a missing file is an error, not an empty digest.
func TestAPIServerConfigDigest(t *testing.T) {
	root := t.TempDir()
	at := func(p string) string { return filepath.Join(root, p) }
	cfg := auditSpec()
	policy := at(apiserverconfig.AuditPolicyFile)
	if _, err := apiServerConfigDigest(at, cfg, nil); err == nil {
		t.Fatal("no error for a missing audit policy")
	}
	if err := os.MkdirAll(filepath.Dir(policy), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(policy, []byte("rules: [{level: Metadata}]\n"), 0o600)
	d1, err := apiServerConfigDigest(at, cfg, nil)
	if err != nil || !strings.HasPrefix(d1, "sha256:") {
		t.Fatalf("digest %q, %v", d1, err)
	}
	if again, _ := apiServerConfigDigest(at, cfg, nil); again != d1 {
		t.Errorf("the same files gave %s and %s", d1, again)
	}
	os.WriteFile(policy, []byte("rules: [{level: RequestResponse}]\n"), 0o600)
	if d2, _ := apiServerConfigDigest(at, cfg, nil); d2 == d1 {
		t.Errorf("a new audit policy kept the digest %s", d1)
	}
	cfg.Spec.ControlPlane.APIServer.Audit = nil
	if d, err := apiServerConfigDigest(at, cfg, nil); d != "" || err != nil {
		t.Errorf("no typed settings: %q, %v", d, err)
	}
	d := &Data{Config: auditSpec(), Root: root}
	for _, c := range upgrade.ControlPlaneComponents {
		a, err := componentAnnotations(d, c)
		if err != nil {
			t.Fatal(err)
		}
		if (a[AnnotationAPIServerConfigDigest] != "") != (c == upgrade.ComponentAPIServer) {
			t.Errorf("%s annotations %v", c, a)
		}
	}
}

// TestUpgradeTreeFollowsPhaseOrder: the upgrade workflow of a control
// plane with typed security settings and a profile has every top-level
// phase of upgrade.PhaseOrder it plans, in that order: apiserver-config
// before the control plane, compliance after uncordon and before the
// record.
func TestUpgradeTreeFollowsPhaseOrder(t *testing.T) {
	cfg := auditSpec()
	cfg.Spec.Security = &machineadm.Security{Profile: "cis-1.12"}
	var top []string
	for _, n := range Upgrade(cfg).Names() {
		if !strings.Contains(n, "/") {
			top = append(top, n)
		}
	}
	var got []string
	for _, n := range top {
		if slices.Contains(upgrade.PhaseOrder, n) {
			got = append(got, n)
		}
	}
	var want []string
	for _, n := range upgrade.PhaseOrder {
		if slices.Contains(top, n) {
			want = append(want, n)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("top-level phases %v\nnot in PhaseOrder's order %v", got, want)
	}
	for _, n := range []string{upgrade.PhaseAPIServerConfig, upgrade.PhaseControlPlane, upgrade.PhaseCompliance, upgrade.PhaseRecord} {
		if !slices.Contains(top, n) {
			t.Errorf("the upgrade tree lacks %s: %v", n, top)
		}
	}
}

// TestAPIServerConfigDigestFollowsFilesNamedInFiles: an authorization
// webhook's kubeconfig is named by the AuthorizationConfiguration, not by
// a flag; a new kubeconfig alone (a rotated credential, a new server)
// changes the digest, so the API server restarts and reads it.
func TestAPIServerConfigDigestFollowsFilesNamedInFiles(t *testing.T) {
	root := t.TempDir()
	at := func(p string) string { return filepath.Join(root, p) }
	cfg := auditSpec()
	cfg.Spec.ControlPlane.APIServer.Audit = nil
	cfg.Spec.ControlPlane.APIServer.Authorization = &machineadm.Authorization{Authorizers: []machineadm.Authorizer{
		{Type: "Node", Name: "node"},
		{Type: "Webhook", Name: "opa", Webhook: &machineadm.AuthorizationWebhook{KubeConfig: machineadm.SecretSource{File: "/etc/opa.kubeconfig"}}},
		{Type: "RBAC", Name: "rbac"},
	}}
	kc := at(apiserverconfig.AuthorizationWebhookKubeConfigFile("opa"))
	if err := os.MkdirAll(filepath.Dir(kc), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(at(apiserverconfig.AuthorizationConfigFile), []byte("kind: AuthorizationConfiguration\n"), 0o600)
	os.WriteFile(kc, []byte("server: https://opa-1.invalid\n"), 0o600)
	d1, err := apiServerConfigDigest(at, cfg, nil)
	if err != nil || d1 == "" {
		t.Fatalf("digest %q, %v", d1, err)
	}
	os.WriteFile(kc, []byte("server: https://opa-2.invalid\n"), 0o600)
	if d2, _ := apiServerConfigDigest(at, cfg, nil); d2 == d1 {
		t.Errorf("a new authorization webhook kubeconfig kept the digest %s: the API server is not restarted", d1)
	}
}

// TestAPIServerRollbackRestoresItsFiles: apiserver-config backs up the
// API server's security files before it rewrites them; the API server's
// rollback puts them back (content and mode) with its previous manifest,
// so that the previous API server does not start on files its flags were
// not made for. A dry run backs up nothing; a run that rewrites nothing
// keeps no copy of the keys; a second backup in the same run keeps the
// first.
func TestAPIServerRollbackRestoresItsFiles(t *testing.T) {
	for _, tc := range []struct {
		name       string
		dryRun     bool
		rewrite    bool
		wantBackup bool
	}{{"rewritten", false, true, true}, {"dry run", true, true, false}, {"nothing rewritten", false, false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, machineadm.APIServerConfigDir)
			enc := filepath.Join(dir, "encryption-config.yaml")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(enc, []byte("old key"), 0o600)
			d := &Data{Config: auditSpec(), Root: root, DryRun: tc.dryRun, Upgrade: &UpgradeRun{Plan: &upgrade.Plan{}}}
			writes := 0
			p := withAPIServerConfigBackup(Phase{Name: upgrade.PhaseAPIServerConfig, Run: func(context.Context, *Data) (Result, error) {
				if !tc.rewrite {
					return Result{}, nil
				}
				writes++
				return Result{Changed: true}, os.WriteFile(enc, []byte(fmt.Sprintf("new key %d", writes)), 0o644)
			}})
			for range 2 {
				if _, err := p.Run(context.Background(), d); err != nil {
					t.Fatal(err)
				}
			}
			if d.Upgrade.apiServerConfigChanged != (tc.rewrite && !tc.dryRun) {
				t.Errorf("rewrite noted: %v", d.Upgrade.apiServerConfigChanged)
			}
			backedUp := false
			if d.Upgrade.backupDir != "" {
				_, err := os.Stat(filepath.Join(d.Upgrade.backupDir, apiServerConfigBackup, "encryption-config.yaml"))
				backedUp = err == nil
			}
			if backedUp != tc.wantBackup {
				t.Fatalf("backed up %v, want %v", backedUp, tc.wantBackup)
			}
			if apiServerConfigRollback(d, upgrade.ComponentControllerManager) != nil {
				t.Errorf("the controller manager's rollback restores the API server's files")
			}
			if !tc.wantBackup {
				return
			}
			if err := apiServerConfigRollback(d, upgrade.ComponentAPIServer)(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(enc)
			fi, _ := os.Stat(enc)
			if string(got) != "old key" || fi.Mode().Perm() != 0o600 {
				t.Errorf("after the rollback: %q, mode %o", got, fi.Mode().Perm())
			}
		})
	}
}

// TestAPIServerRestartsWhenOnlyItsFilesChanged: a plan with no change of
// the spec (a key delivered by file got a new content: the path in the
// spec is the same) still has apiserver-config rewrite the files; the API
// server whose manifest carries another digest is replaced, so it does
// not keep the old key until some later restart; the same digest, a dry
// run or another component restarts nothing. Without the annotation
// (a bootstrapped manifest) it is replaced when apiserver-config changed
// the files in this run.
func TestAPIServerRestartsWhenOnlyItsFilesChanged(t *testing.T) {
	old := controlPlaneUpgrader(machineadm.RuntimeStaticPods)
	defer RegisterControlPlaneUpgrader(machineadm.RuntimeStaticPods, old)
	root := t.TempDir()
	policy := filepath.Join(root, apiserverconfig.AuditPolicyFile)
	manifest := filepath.Join(root, kubernetesDir, "manifests", "kube-apiserver.yaml")
	for _, dir := range []string{filepath.Dir(policy), filepath.Dir(manifest)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(policy, []byte("rules: [{level: Metadata}]\n"), 0o600)
	writeManifest := func(digest string) {
		ann := ""
		if digest != "" {
			ann = "  annotations:\n    " + AnnotationAPIServerConfigDigest + ": " + digest + "\n"
		}
		os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-apiserver\n  namespace: kube-system\n"+ann+"spec:\n  containers:\n  - name: kube-apiserver\n    image: registry.k8s.io/kube-apiserver:v1.37.2\n"), 0o600)
	}
	cur, err := apiServerConfigDigest(func(p string) string { return filepath.Join(root, p) }, auditSpec(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := controlPlanePhase()
	for _, tc := range []struct {
		name      string
		digest    string
		component string
		dryRun    bool
		changed   bool
		want      bool
	}{
		{"other digest", "sha256:0000", upgrade.ComponentAPIServer, false, false, true},
		{"same digest", cur, upgrade.ComponentAPIServer, false, true, false},
		{"dry run", "sha256:0000", upgrade.ComponentAPIServer, true, false, false},
		{"controller manager", "sha256:0000", upgrade.ComponentControllerManager, false, false, false},
		{"no annotation, files rewritten", "", upgrade.ComponentAPIServer, false, true, true},
		{"no annotation, files as they were", "", upgrade.ComponentAPIServer, false, false, false},
	} {
		writeManifest(tc.digest)
		rec := &recordingUpgrader{}
		RegisterControlPlaneUpgrader(machineadm.RuntimeStaticPods, rec)
		d := &Data{Config: auditSpec(), Root: root, DryRun: tc.dryRun, Upgrade: &UpgradeRun{Plan: &upgrade.Plan{}, apiServerConfigChanged: tc.changed}}
		var sub Phase
		for _, p := range cp.Phases {
			if p.Name == tc.component {
				sub = p
			}
		}
		if _, err := sub.Run(context.Background(), d); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := len(rec.got) == 1; got != tc.want {
			t.Errorf("%s: replaced %v, want a replacement: %v", tc.name, rec.got, tc.want)
		}
	}
}

// TestAPIServerConfigDigestIsKeyed: the digest on the mirror pod (which
// whoever reads kube-system's pods sees) is keyed with the node's record
// key, so a guessable secret in a file (a webhook kubeconfig's password)
// cannot be tried against it offline: another key gives another digest,
// the same key the same one.
func TestAPIServerConfigDigestIsKeyed(t *testing.T) {
	root := t.TempDir()
	policy := filepath.Join(root, apiserverconfig.AuditPolicyFile)
	if err := os.MkdirAll(filepath.Dir(policy), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(policy, []byte("rules: [{level: Metadata}]\n"), 0o600)
	digest := func(key string) string {
		d := &Data{Config: auditSpec(), Root: root, Upgrade: &UpgradeRun{Record: &upgrade.Record{Key: key}}}
		a, err := componentAnnotations(d, upgrade.ComponentAPIServer)
		if err != nil {
			t.Fatal(err)
		}
		return a[AnnotationAPIServerConfigDigest]
	}
	k1, k2 := strings.Repeat("11", 32), strings.Repeat("22", 32)
	if a, b, again := digest(k1), digest(k2), digest(k1); a == b || a != again || a == "" {
		t.Errorf("digests under two keys %q, %q; again %q", a, b, again)
	}
}

// TestComponentAnnotationsCarryTheCertificatesDigest: the control-plane
// phase's regenerated manifest of the controller manager or the scheduler
// carries the digest of the client certificates they will read at start
// where the running manifest carries one (certs-renew annotated it): a
// manifest regenerated with the same settings is not unequal for that
// annotation alone. A manifest without it (kubeadm's) gets none, so the
// phase after kubeadm's upgrade finds it equal; nor without a manifest,
// and etcd and the API server never.
func TestComponentAnnotationsCarryTheCertificatesDigest(t *testing.T) {
	root := t.TempDir()
	cfg := auditSpec()
	cfg.Spec.ControlPlane.APIServer.Audit = nil
	d := &Data{Config: cfg, Root: root}
	kdir := filepath.Join(root, "etc", "kubernetes")
	if err := os.MkdirAll(filepath.Join(kdir, "manifests"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"scheduler.conf", "controller-manager.conf"} {
		kc := clientcmdapi.NewConfig()
		kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte(name + "-cert"), ClientKeyData: []byte("key")}
		kc.Contexts["x"] = &clientcmdapi.Context{AuthInfo: "u"}
		kc.CurrentContext = "x"
		if err := clientcmd.WriteToFile(*kc, filepath.Join(kdir, name)); err != nil {
			t.Fatal(err)
		}
	}
	want, err := day2.CertificatesDigest(kdir, upgrade.ComponentScheduler)
	if err != nil || want == "" {
		t.Fatalf("digest %q, %v", want, err)
	}
	manifest := func(component, annotations string) {
		t.Helper()
		pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + component + "\n  namespace: kube-system\n" + annotations
		if err := os.WriteFile(filepath.Join(kdir, "manifests", component+".yaml"), []byte(pod), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The scheduler's manifest was annotated by certs-renew (since then
	// renewed: another digest); the controller manager's is kubeadm's.
	manifest(upgrade.ComponentScheduler, "  annotations:\n    "+day2.AnnotationCertificatesDigest+": sha256:old\n")
	manifest(upgrade.ComponentControllerManager, "")
	for _, c := range upgrade.ControlPlaneComponents {
		a, err := componentAnnotations(d, c)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		got := a[day2.AnnotationCertificatesDigest]
		if c == upgrade.ComponentScheduler && got != want || c != upgrade.ComponentScheduler && got != "" {
			t.Errorf("%s: certificates digest %q (want %q for the scheduler only)", c, got, want)
		}
	}
}
