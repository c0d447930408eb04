package phases

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/apiserverconfig"
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
	if _, err := apiServerConfigDigest(at, cfg); err == nil {
		t.Fatal("no error for a missing audit policy")
	}
	if err := os.MkdirAll(filepath.Dir(policy), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(policy, []byte("rules: [{level: Metadata}]\n"), 0o600)
	d1, err := apiServerConfigDigest(at, cfg)
	if err != nil || !strings.HasPrefix(d1, "sha256:") {
		t.Fatalf("digest %q, %v", d1, err)
	}
	if again, _ := apiServerConfigDigest(at, cfg); again != d1 {
		t.Errorf("the same files gave %s and %s", d1, again)
	}
	os.WriteFile(policy, []byte("rules: [{level: RequestResponse}]\n"), 0o600)
	if d2, _ := apiServerConfigDigest(at, cfg); d2 == d1 {
		t.Errorf("a new audit policy kept the digest %s", d1)
	}
	cfg.Spec.ControlPlane.APIServer.Audit = nil
	if d, err := apiServerConfigDigest(at, cfg); d != "" || err != nil {
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
	d1, err := apiServerConfigDigest(at, cfg)
	if err != nil || d1 == "" {
		t.Fatalf("digest %q, %v", d1, err)
	}
	os.WriteFile(kc, []byte("server: https://opa-2.invalid\n"), 0o600)
	if d2, _ := apiServerConfigDigest(at, cfg); d2 == d1 {
		t.Errorf("a new authorization webhook kubeconfig kept the digest %s: the API server is not restarted", d1)
	}
}

// TestAPIServerRollbackRestoresItsFiles: apiserver-config backs up the
// API server's security files before it rewrites them; the API server's
// rollback puts them back (content and mode) with its previous manifest,
// so that the previous API server does not start on files its flags were
// not made for. A dry run, or a plan without apiserver-config, backs up
// nothing; a second backup in the same run keeps the first.
func TestAPIServerRollbackRestoresItsFiles(t *testing.T) {
	for _, tc := range []struct {
		name        string
		dryRun      bool
		planned     bool
		wantRestore bool
	}{{"planned", false, true, true}, {"dry run", true, true, false}, {"not planned", false, false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, machineadm.APIServerConfigDir)
			enc := filepath.Join(dir, "encryption-config.yaml")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(enc, []byte("old key"), 0o600)
			plan := &upgrade.Plan{}
			if tc.planned {
				plan.Steps = []upgrade.Step{{Phase: upgrade.PhaseAPIServerConfig}}
			}
			d := &Data{Config: auditSpec(), Root: root, DryRun: tc.dryRun, Upgrade: &UpgradeRun{Plan: plan}}
			writes := 0
			p := withAPIServerConfigBackup(Phase{Name: upgrade.PhaseAPIServerConfig, Run: func(context.Context, *Data) (Result, error) {
				writes++
				return Result{Changed: true}, os.WriteFile(enc, []byte(fmt.Sprintf("new key %d", writes)), 0o644)
			}})
			for range 2 {
				if _, err := p.Run(context.Background(), d); err != nil {
					t.Fatal(err)
				}
			}
			rb := apiServerConfigRollback(d, upgrade.ComponentAPIServer)
			if (rb != nil) != tc.wantRestore {
				t.Fatalf("rollback %v, want one: %v", rb != nil, tc.wantRestore)
			}
			if apiServerConfigRollback(d, upgrade.ComponentControllerManager) != nil {
				t.Errorf("the controller manager's rollback restores the API server's files")
			}
			if rb == nil {
				return
			}
			if err := rb(); err != nil {
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
